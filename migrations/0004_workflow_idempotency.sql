ALTER TABLE `workflow_runs` ADD `idempotency_key` text;--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_runs_idempotency_key` ON `workflow_runs` (`session_id`,`token_id`,`idempotency_key`);