-- The job queue of tuner serve. A server is one `tuner serve` process, alive while its heartbeat
-- is younger than its ttl; a job is a config and run options that `tuner submit` queued; a claim
-- is one candidate of a job's generation, taken by one GPU (lane) of one server, so that several
-- GPUs and hosts share a generation and none evaluates what another did. A claim whose server
-- died returns to the queue.
CREATE TABLE servers (
	id INTEGER PRIMARY KEY,
	host TEXT NOT NULL,
	pid INTEGER NOT NULL,
	started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	heartbeat_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	ttl REAL NOT NULL,
	stopped_at TEXT,
	gpus TEXT NOT NULL,
	device TEXT NOT NULL,
	roots TEXT NOT NULL
);

CREATE TABLE jobs (
	id INTEGER PRIMARY KEY,
	submitted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	submitted_by TEXT NOT NULL,
	status TEXT NOT NULL DEFAULT 'queued'
		CONSTRAINT jobs_status CHECK (status IN ('queued', 'running', 'done', 'failed',
			'cancelled', 'interrupted')),
	priority INTEGER NOT NULL DEFAULT 0,
	config_path TEXT NOT NULL,
	config_text TEXT NOT NULL,
	options TEXT NOT NULL,
	gpu INTEGER NOT NULL CONSTRAINT jobs_gpu CHECK (gpu IN (0, 1)),
	server_id INTEGER REFERENCES servers (id),
	run_id INTEGER REFERENCES runs (id),
	started_at TEXT,
	finished_at TEXT,
	cancel INTEGER NOT NULL DEFAULT 0 CONSTRAINT jobs_cancel CHECK (cancel IN (0, 1)),
	message TEXT
);
CREATE INDEX jobs_status ON jobs (status, priority, id);

CREATE TABLE claims (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	generation INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	variant_hash TEXT NOT NULL,
	server_id INTEGER REFERENCES servers (id),
	gpu INTEGER,
	claimed_at TEXT,
	done INTEGER NOT NULL DEFAULT 0 CONSTRAINT claims_done CHECK (done IN (0, 1)),
	PRIMARY KEY (run_id, generation, seq)
);
CREATE INDEX claims_server ON claims (server_id);
