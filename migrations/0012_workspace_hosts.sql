DROP INDEX `workspaces_path_unique`;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `host_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_host_path` ON `workspaces` (`host_id`,`path`);--> statement-breakpoint
ALTER TABLE `host_generations` ADD `starting` integer DEFAULT false NOT NULL;