ALTER TABLE `host_generations` ADD `start_ticks` integer;--> statement-breakpoint
ALTER TABLE `host_generations` ADD `boot_id` text;--> statement-breakpoint
ALTER TABLE `host_generations` ADD `hostname` text;--> statement-breakpoint
ALTER TABLE `host_generations` ADD `pid_namespace` text;--> statement-breakpoint
ALTER TABLE `host_generations` ADD `heartbeat_at` integer;--> statement-breakpoint
ALTER TABLE `host_generations` ADD `ended_at` integer;