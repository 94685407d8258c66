ALTER TABLE `workflow_runs` ADD `wall_time_limit_ms` integer;--> statement-breakpoint
ALTER TABLE `workflow_runs` ADD `cpu_time_limit_ms` integer;--> statement-breakpoint
ALTER TABLE `workflow_runs` ADD `stop_limit` text;