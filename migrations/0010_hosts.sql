CREATE TABLE `hosts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`version` text NOT NULL,
	`cpus` integer NOT NULL,
	`memory_bytes` integer NOT NULL,
	`registered_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`updated_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
ALTER TABLE `host_generations` ADD `host_id` text;--> statement-breakpoint
CREATE INDEX `host_generations_host` ON `host_generations` (`host_id`,`generation`);--> statement-breakpoint
ALTER TABLE `sessions` ADD `host_id` text;--> statement-breakpoint
CREATE INDEX `sessions_host` ON `sessions` (`host_id`);