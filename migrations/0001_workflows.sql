CREATE TABLE `workflow_events` (
	`run_id` text NOT NULL,
	`sequence` integer NOT NULL,
	`type` text NOT NULL,
	`member_seq` integer,
	`outcome` text,
	`data` text NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	PRIMARY KEY(`run_id`, `sequence`),
	FOREIGN KEY (`run_id`) REFERENCES `workflow_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `workflow_events_member` ON `workflow_events` (`run_id`,`type`,`member_seq`);--> statement-breakpoint
CREATE TABLE `workflow_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`status` text NOT NULL,
	`script` text NOT NULL,
	`input` text,
	`concurrency` integer NOT NULL,
	`profile` text,
	`token_id` text NOT NULL,
	`host_generation` integer NOT NULL,
	`pid` integer,
	`pid_start_ticks` integer,
	`last_sequence` integer DEFAULT 0 NOT NULL,
	`stop_reason` text,
	`error` text,
	`value` text,
	`agents_started` integer,
	`cancel_reason` text,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`updated_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`ended_at` integer
);
--> statement-breakpoint
CREATE INDEX `workflow_runs_session` ON `workflow_runs` (`session_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `workflow_runs_status` ON `workflow_runs` (`status`,`host_generation`);--> statement-breakpoint
ALTER TABLE `terminals` ADD `workflow_run` text;--> statement-breakpoint
ALTER TABLE `terminals` ADD `workflow_seq` integer;--> statement-breakpoint
CREATE INDEX `terminals_workflow` ON `terminals` (`workflow_run`,`workflow_seq`);