-- Liveness of a run. A run records the process that runs it (pid and its start time on host), a
-- heartbeat that moves as it progresses, and the seconds it was active, so that a reader can tell
-- a live run from one whose process died without a word (shown and, by the next writer, stored
-- as 'interrupted'), and so that the hours a dead run lay idle are not counted as its wall time.
-- The status constraint gains 'interrupted': the table is rebuilt (ALTER TABLE cannot change a
-- CHECK), keeping every row and id.
CREATE TABLE runs_new (
	id INTEGER PRIMARY KEY,
	started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	finished_at TEXT,
	status TEXT NOT NULL DEFAULT 'running'
		CONSTRAINT runs_status CHECK (status IN ('running', 'stopped', 'done', 'failed',
			'interrupted')),
	command TEXT NOT NULL,
	config_path TEXT,
	config_text TEXT,
	template_name TEXT NOT NULL,
	template_hash TEXT NOT NULL,
	arch TEXT NOT NULL,
	device TEXT NOT NULL,
	driver TEXT NOT NULL,
	nvrtc TEXT NOT NULL,
	strategy TEXT NOT NULL,
	seed INTEGER NOT NULL,
	generations INTEGER NOT NULL,
	population INTEGER NOT NULL,
	shapes TEXT NOT NULL,
	gpu INTEGER NOT NULL CONSTRAINT runs_gpu CHECK (gpu IN (0, 1)),
	replay_of TEXT,
	host TEXT,
	pid INTEGER,
	pid_start INTEGER,
	heartbeat_at TEXT,
	active_seconds REAL
);
INSERT INTO runs_new (id, started_at, finished_at, status, command, config_path, config_text,
	template_name, template_hash, arch, device, driver, nvrtc, strategy, seed, generations,
	population, shapes, gpu, replay_of)
SELECT id, started_at, finished_at, status, command, config_path, config_text, template_name,
	template_hash, arch, device, driver, nvrtc, strategy, seed, generations, population, shapes,
	gpu, replay_of FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
