CREATE TABLE `display_history` (
	`session_id` text NOT NULL,
	`terminal_id` text NOT NULL,
	`epoch` integer NOT NULL,
	`first_row` integer NOT NULL,
	`row_count` integer NOT NULL,
	`body` blob NOT NULL,
	PRIMARY KEY(`session_id`, `terminal_id`, `epoch`, `first_row`)
);
--> statement-breakpoint
ALTER TABLE `display_revisions` ADD `format` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `display_revisions` ADD `head_chunks` integer;--> statement-breakpoint
ALTER TABLE `display_revisions` ADD `history_epoch` integer;--> statement-breakpoint
ALTER TABLE `display_revisions` ADD `history_first` integer;--> statement-breakpoint
ALTER TABLE `display_revisions` ADD `history_end` integer;--> statement-breakpoint
ALTER TABLE `display_revisions` ADD `restore` text;