CREATE TABLE `resource_parts` (
	`resource_id` text NOT NULL,
	`seq` integer NOT NULL,
	`content` blob NOT NULL,
	PRIMARY KEY(`resource_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `resource_uploads` (
	`resource_id` text PRIMARY KEY NOT NULL,
	`started_at` integer NOT NULL
);
