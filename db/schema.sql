-- The whole current schema of the tuner database; a fresh database is created from this file.
-- schema-version: 4
--
-- Changing the schema: add db/migrations/NNNN-description.sql (NNNN = the new version, the
-- statements that take a database from the previous version to it), apply the same change here,
-- and raise the schema-version line above to NNNN; scripts/embed-sql refuses a mismatch.
--
-- Times are UTC, ISO 8601 with milliseconds. Outcomes are outcome_name() text ("ok",
-- "constraint", "smem", ...). Run-independent facts (variants, builds, measurements) are shared
-- by every run in the file; the rest belongs to one run.

-- One `tuner run`: what was searched, where, how, and how it ended.
CREATE TABLE runs (
	id INTEGER PRIMARY KEY,
	started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	finished_at TEXT,                 -- NULL while running
	status TEXT NOT NULL DEFAULT 'running'   -- 'interrupted': its process died without a word
		CONSTRAINT runs_status CHECK (status IN ('running', 'stopped', 'done', 'failed',
			'interrupted')),
	command TEXT NOT NULL,            -- the command line
	config_path TEXT,
	config_text TEXT,                 -- the config as read, so the run can be reproduced
	template_name TEXT NOT NULL,
	template_hash TEXT NOT NULL,
	arch TEXT NOT NULL,               -- "sm_90"
	device TEXT NOT NULL,             -- "NVIDIA H100 80GB HBM3" or "none"
	driver TEXT NOT NULL,             -- "580.159.04" or "none"
	nvrtc TEXT NOT NULL,              -- "13.0"
	strategy TEXT NOT NULL,           -- "evolve", "random", "exhaustive"
	seed INTEGER NOT NULL,            -- the 64-bit seed's bit pattern (>= 2^63 reads negative)
	generations INTEGER NOT NULL,
	population INTEGER NOT NULL,
	shapes TEXT NOT NULL,             -- JSON array of {name, dims...}
	gpu INTEGER NOT NULL CONSTRAINT runs_gpu CHECK (gpu IN (0, 1)),
	replay_of TEXT,                   -- the database a replay answered from, else NULL
	host TEXT,                        -- where the process that runs it runs (gethostname)
	pid INTEGER,                      -- that process
	pid_start INTEGER,                -- its start time (clock ticks after boot), against pid reuse
	heartbeat_at TEXT,                -- its last sign of life, moved as the run progresses
	active_seconds REAL               -- seconds it was running, summed over stops and resumes
);

-- A point of the search space, shared by all runs: identified by the hash of (template source,
-- params, arch, options), so nothing is compiled or measured twice.
CREATE TABLE variants (
	id INTEGER PRIMARY KEY,
	hash TEXT NOT NULL UNIQUE,
	template_name TEXT NOT NULL,
	template_hash TEXT NOT NULL,
	arch TEXT NOT NULL,
	params TEXT NOT NULL,             -- canonical "A=1,B=2"
	options TEXT NOT NULL,            -- compile options, space separated
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX variants_template ON variants (template_hash, arch, params);

-- One NVRTC compile unit of a variant (one per distinct shape spec, plain or sanitize).
CREATE TABLE builds (
	id INTEGER PRIMARY KEY,
	variant_id INTEGER NOT NULL REFERENCES variants (id),
	key TEXT NOT NULL UNIQUE,         -- the cubin cache key
	spec TEXT NOT NULL,               -- "N=128"
	sanitize INTEGER NOT NULL CONSTRAINT builds_sanitize CHECK (sanitize IN (0, 1)),
	outcome TEXT NOT NULL,            -- "ok" or "compile"
	regs INTEGER NOT NULL,
	spill_stores INTEGER NOT NULL,    -- bytes
	spill_loads INTEGER NOT NULL,     -- bytes
	static_smem INTEGER NOT NULL,     -- bytes
	stack_frame INTEGER NOT NULL,     -- bytes
	seconds REAL NOT NULL,            -- compile wall time, 0 when cached
	cached INTEGER NOT NULL CONSTRAINT builds_cached CHECK (cached IN (0, 1)),
	cubin_size INTEGER NOT NULL,
	log TEXT,                         -- NVRTC's log, ptxas -v report included
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX builds_variant ON builds (variant_id);

-- Every gate verdict on a variant in a run, passes included, so `tuner show` can explain it.
CREATE TABLE gates (
	id INTEGER PRIMARY KEY,
	run_id INTEGER NOT NULL REFERENCES runs (id),
	variant_id INTEGER NOT NULL REFERENCES variants (id),
	gate TEXT NOT NULL,               -- "constraint", "smem", "align", ...
	shape TEXT,                       -- the shape's name, NULL for a shape-independent verdict
	outcome TEXT NOT NULL,
	reason TEXT NOT NULL,
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX gates_variant ON gates (variant_id, run_id);
CREATE INDEX gates_run ON gates (run_id);

-- The final outcome of a variant in a run, and its fitness (geometric-mean speedup over the
-- shape suite, with its 95% interval) once known.
CREATE TABLE evals (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	variant_id INTEGER NOT NULL REFERENCES variants (id),
	generation INTEGER NOT NULL,
	outcome TEXT NOT NULL,
	reason TEXT NOT NULL,
	fitness REAL,
	fitness_lo REAL,
	fitness_hi REAL,
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	PRIMARY KEY (run_id, variant_id)
) WITHOUT ROWID;
CREATE INDEX evals_run_outcome ON evals (run_id, outcome);
CREATE INDEX evals_variant ON evals (variant_id);

-- Check-then-time result of a variant on one shape on one device. A variant already measured on
-- the same device and shape is never measured again, by any run: hence the UNIQUE key.
CREATE TABLE measurements (
	id INTEGER PRIMARY KEY,
	variant_id INTEGER NOT NULL REFERENCES variants (id),
	device TEXT NOT NULL,
	shape TEXT NOT NULL,              -- the shape's name in the config
	shape_dims TEXT NOT NULL,         -- "rows=4096,cols=4096"
	outcome TEXT NOT NULL,
	reason TEXT NOT NULL,
	rel_l2 REAL,                      -- NULL when not checked
	max_abs REAL,
	median_us REAL,                   -- NULL when not timed
	ci_lo_us REAL,
	ci_hi_us REAL,
	tflops REAL,
	samples TEXT NOT NULL,            -- JSON array of microseconds per launch
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	run_id INTEGER REFERENCES runs (id), -- the run that measured it, NULL if none
	sm_mhz REAL,                      -- while timed (NVML), NULL when not watched
	temp_c REAL,
	power_w REAL,
	throttle INTEGER,                 -- NVML's throttle reasons seen (a mask), 0 for none
	retaken INTEGER,                  -- 1: timed again after throttling
	gbps REAL,                        -- the problem's bytes over the median, NULL without bytes
	UNIQUE (variant_id, device, shape_dims)
);
CREATE INDEX measurements_run ON measurements (run_id);

-- The candidates of each generation and why they were proposed.
CREATE TABLE population (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	generation INTEGER NOT NULL,
	variant_id INTEGER NOT NULL REFERENCES variants (id),
	origin TEXT NOT NULL CONSTRAINT population_origin
		CHECK (origin IN ('baseline', 'random', 'mutation', 'crossover', 'sweep')),
	parent_a INTEGER REFERENCES variants (id),
	parent_b INTEGER REFERENCES variants (id),
	PRIMARY KEY (run_id, generation, variant_id)
) WITHOUT ROWID;
CREATE INDEX population_variant ON population (variant_id);

-- The elite after each generation, best first (rank 1).
CREATE TABLE elite (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	generation INTEGER NOT NULL,
	rank INTEGER NOT NULL CONSTRAINT elite_rank CHECK (rank >= 1),
	variant_id INTEGER NOT NULL REFERENCES variants (id),
	fitness REAL NOT NULL,
	PRIMARY KEY (run_id, generation, rank)
) WITHOUT ROWID;
CREATE INDEX elite_variant ON elite (variant_id);

-- One `tuner serve` process: alive while its heartbeat is younger than ttl seconds (on the
-- database's clock) and stopped_at is NULL.
CREATE TABLE servers (
	id INTEGER PRIMARY KEY,
	host TEXT NOT NULL,
	pid INTEGER NOT NULL,
	started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	heartbeat_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	ttl REAL NOT NULL,                -- seconds without a heartbeat after which it counts as dead
	stopped_at TEXT,                  -- NULL while serving
	gpus TEXT NOT NULL,               -- the GPU ordinals it owns, "0,1"; "" for none
	device TEXT NOT NULL,             -- their model, "NVIDIA H100 80GB HBM3", or "none"
	roots TEXT NOT NULL               -- JSON array of the directories it reads jobs from
);

-- A tuning job: a config and run options that `tuner submit` validated and queued.
CREATE TABLE jobs (
	id INTEGER PRIMARY KEY,
	submitted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	submitted_by TEXT NOT NULL,       -- user@host
	status TEXT NOT NULL DEFAULT 'queued'
		CONSTRAINT jobs_status CHECK (status IN ('queued', 'running', 'done', 'failed',
			'cancelled', 'interrupted')),
	priority INTEGER NOT NULL DEFAULT 0, -- higher first
	config_path TEXT NOT NULL,        -- absolute, under a root of the submitter
	config_text TEXT NOT NULL,        -- the config as validated; a server runs only this text
	options TEXT NOT NULL,            -- JSON object of run options: generations, seed, replay...
	gpu INTEGER NOT NULL CONSTRAINT jobs_gpu CHECK (gpu IN (0, 1)), -- 0: replay or --no-gpu
	server_id INTEGER REFERENCES servers (id), -- the server that owns it while running
	run_id INTEGER REFERENCES runs (id),       -- its run, once started
	started_at TEXT,
	finished_at TEXT,
	cancel INTEGER NOT NULL DEFAULT 0 CONSTRAINT jobs_cancel CHECK (cancel IN (0, 1)),
	message TEXT                      -- why it failed or was cancelled
);
CREATE INDEX jobs_status ON jobs (status, priority, id);

-- One candidate of a job's generation, claimed by one GPU of one server; the generation after the
-- last holds the one claim of the final elite's compute-sanitizer gate. Every server proposes the
-- same candidates, in the same order (seq); a claim whose server died is taken again.
CREATE TABLE claims (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	generation INTEGER NOT NULL,
	seq INTEGER NOT NULL,             -- the candidate's place in its generation
	variant_hash TEXT NOT NULL,
	server_id INTEGER REFERENCES servers (id), -- NULL: nobody holds it
	gpu INTEGER,                      -- the GPU ordinal that took it on that server
	claimed_at TEXT,
	done INTEGER NOT NULL DEFAULT 0 CONSTRAINT claims_done CHECK (done IN (0, 1)),
	PRIMARY KEY (run_id, generation, seq)
);
CREATE INDEX claims_server ON claims (server_id);
