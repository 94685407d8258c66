CREATE TABLE `terminal_commands` (
	`session_id` text NOT NULL,
	`terminal_id` text NOT NULL,
	`n` integer NOT NULL,
	`command` text NOT NULL,
	`cwd` text,
	`start_sequence` integer NOT NULL,
	`start_skip` integer NOT NULL,
	`end_sequence` integer,
	`end_length` integer,
	`exit_code` integer,
	`started_at` integer NOT NULL,
	`ended_at` integer,
	`marks` text NOT NULL,
	`output_bytes` integer,
	`output_text` text,
	`output_omitted` integer,
	PRIMARY KEY(`session_id`, `terminal_id`, `n`)
);
--> statement-breakpoint
ALTER TABLE `sessions` ADD `name` text;--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_name_unique` ON `sessions` (`name`);--> statement-breakpoint
ALTER TABLE `terminals` ADD `name` text;--> statement-breakpoint
ALTER TABLE `terminals` ADD `command_marks` text DEFAULT 'none' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `terminals_name` ON `terminals` (`session_id`,`name`);