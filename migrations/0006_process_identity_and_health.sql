CREATE TABLE `health_probes` (
	`writer` text PRIMARY KEY NOT NULL,
	`checked_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `terminals` ADD `leader_pid` integer;--> statement-breakpoint
ALTER TABLE `terminals` ADD `leader_start_ticks` integer;--> statement-breakpoint
ALTER TABLE `terminals` ADD `boot_id` text;