CREATE TABLE `archived_sessions` (
	`session_id` text PRIMARY KEY NOT NULL,
	`archived_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`name` text NOT NULL,
	`media_type` text DEFAULT 'text/plain' NOT NULL,
	`content` blob NOT NULL,
	`bytes` integer NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `attachments_session` ON `attachments` (`session_id`);--> statement-breakpoint
CREATE TABLE `data_migrations` (
	`name` text PRIMARY KEY NOT NULL,
	`applied_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`detail` text
);
--> statement-breakpoint
CREATE TABLE `display_chunks` (
	`session_id` text NOT NULL,
	`terminal_id` text NOT NULL,
	`revision` integer NOT NULL,
	`chunk` integer NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`session_id`, `terminal_id`, `revision`, `chunk`)
);
--> statement-breakpoint
CREATE TABLE `display_revisions` (
	`session_id` text NOT NULL,
	`terminal_id` text NOT NULL,
	`revision` integer NOT NULL,
	`cols` integer NOT NULL,
	`rows` integer NOT NULL,
	`cursor_row` integer NOT NULL,
	`cursor_col` integer NOT NULL,
	`cursor_visible` integer NOT NULL,
	`cursor_style` text NOT NULL,
	`cursor_blink` integer NOT NULL,
	`title` text DEFAULT '' NOT NULL,
	`alternate_screen` integer NOT NULL,
	`palette` text NOT NULL,
	`input_modes` text NOT NULL,
	`sequence` integer NOT NULL,
	`viewport_rows` integer NOT NULL,
	`alternate_rows` integer NOT NULL,
	`history_rows` integer NOT NULL,
	`truncated` integer NOT NULL,
	`encoded_bytes` integer NOT NULL,
	`chunk_count` integer NOT NULL,
	`origin` text NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	PRIMARY KEY(`session_id`, `terminal_id`, `revision`)
);
--> statement-breakpoint
CREATE TABLE `host_generations` (
	`generation` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`pid` integer NOT NULL,
	`started_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `legacy_terminal_records` (
	`session_id` text NOT NULL,
	`terminal_id` text NOT NULL,
	`title` text DEFAULT '' NOT NULL,
	`cols` integer NOT NULL,
	`rows` integer NOT NULL,
	`text` text NOT NULL,
	`cursor_row` integer,
	`cursor_col` integer,
	`updated_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	PRIMARY KEY(`session_id`, `terminal_id`)
);
--> statement-breakpoint
CREATE TABLE `registry_events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`cwd` text NOT NULL,
	`title` text,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `stream_tickets` (
	`secret_hash` text PRIMARY KEY NOT NULL,
	`token_id` text NOT NULL,
	`path` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	FOREIGN KEY (`token_id`) REFERENCES `tokens`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `stream_tickets_expiry` ON `stream_tickets` (`expires_at`);--> statement-breakpoint
CREATE TABLE `terminals` (
	`session_id` text NOT NULL,
	`id` text NOT NULL,
	`title` text NOT NULL,
	`shell_path` text NOT NULL,
	`shell_args` text NOT NULL,
	`cwd` text NOT NULL,
	`cols` integer NOT NULL,
	`rows` integer NOT NULL,
	`state` text NOT NULL,
	`exit_code` integer,
	`exit_signal` integer,
	`error` text,
	`host_generation` integer NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`updated_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`exited_at` integer,
	`closed_at` integer,
	PRIMARY KEY(`session_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `terminals_state` ON `terminals` (`state`,`host_generation`);--> statement-breakpoint
CREATE TABLE `token_grants` (
	`token_id` text NOT NULL,
	`grant` text NOT NULL,
	PRIMARY KEY(`token_id`, `grant`),
	FOREIGN KEY (`token_id`) REFERENCES `tokens`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `token_sessions` (
	`token_id` text NOT NULL,
	`session_id` text NOT NULL,
	PRIMARY KEY(`token_id`, `session_id`),
	FOREIGN KEY (`token_id`) REFERENCES `tokens`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`secret_hash` text NOT NULL,
	`all_sessions` integer NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`expires_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tokens_secret_hash_unique` ON `tokens` (`secret_hash`);--> statement-breakpoint
CREATE TABLE `tool_results` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`tool_name` text NOT NULL,
	`content` text NOT NULL,
	`bytes` integer NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `tool_results_session` ON `tool_results` (`session_id`);--> statement-breakpoint
CREATE TABLE `workspace_sessions` (
	`workspace_id` text NOT NULL,
	`session_id` text NOT NULL,
	`position` real NOT NULL,
	PRIMARY KEY(`workspace_id`, `session_id`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `workspace_sessions_session` ON `workspace_sessions` (`session_id`);--> statement-breakpoint
CREATE TABLE `workspaces` (
	`id` text PRIMARY KEY NOT NULL,
	`path` text NOT NULL,
	`title` text NOT NULL,
	`position` real NOT NULL,
	`created_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL,
	`updated_at` integer DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_path_unique` ON `workspaces` (`path`);--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_title_unique` ON `workspaces` (`title`);