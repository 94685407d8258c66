CREATE TABLE `token_observe_env` (
	`token_id` text NOT NULL,
	`name` text NOT NULL,
	PRIMARY KEY(`token_id`, `name`),
	FOREIGN KEY (`token_id`) REFERENCES `tokens`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `terminals` ADD `foreground_command` text;