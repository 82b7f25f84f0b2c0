/** The SQLite schema, one migration per step. Never edit a released step: add the next one. */
import type { Migration } from '../migrations.ts';

export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'projects, streams and entries',
    sql: `
      CREATE TABLE projects (
        project_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
      ) STRICT;
      CREATE TABLE streams (
        stream_id INTEGER PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects (project_id),
        kind TEXT NOT NULL CHECK (kind IN ('scope', 'session')),
        name TEXT NOT NULL,
        head INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        UNIQUE (project_id, kind, name)
      ) STRICT;
      CREATE TABLE entries (
        global_seq INTEGER PRIMARY KEY AUTOINCREMENT,
        stream_id INTEGER NOT NULL REFERENCES streams (stream_id),
        position INTEGER NOT NULL,
        type TEXT NOT NULL,
        source_id TEXT,
        digest TEXT NOT NULL,
        body TEXT,
        recorded_at TEXT NOT NULL,
        retracted_at TEXT,
        retraction_reason TEXT,
        UNIQUE (stream_id, position)
      ) STRICT;
      CREATE UNIQUE INDEX entries_source ON entries (stream_id, source_id) WHERE source_id IS NOT NULL;
    `,
  },
  {
    version: 2,
    name: 'prepared handoffs and handoff revisions',
    sql: `
      CREATE TABLE prepared_handoffs (
        project_id TEXT NOT NULL REFERENCES projects (project_id),
        digest TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (project_id, digest)
      ) STRICT;
      CREATE TABLE handoff_revisions (
        stream_id INTEGER NOT NULL REFERENCES streams (stream_id),
        revision INTEGER NOT NULL CHECK (revision >= 1),
        prepared_digest TEXT NOT NULL,
        committed_at TEXT NOT NULL,
        PRIMARY KEY (stream_id, revision)
      ) STRICT;
    `,
  },
  {
    version: 3,
    name: 'each prepared handoff committed at most once per scope',
    sql: `CREATE UNIQUE INDEX handoff_revisions_prepared ON handoff_revisions (stream_id, prepared_digest);`,
  },
  {
    version: 4,
    name: 'a stream head is the largest position of its entries',
    sql: `ALTER TABLE streams DROP COLUMN head;`,
  },
  {
    version: 5,
    name: 'entries indexed by metadata.kind',
    sql: `
      ALTER TABLE entries ADD COLUMN kind TEXT;
      UPDATE entries SET kind = json_extract(body, '$.metadata.kind')
        WHERE body IS NOT NULL AND json_type(body, '$.metadata.kind') = 'text'
          AND length(json_extract(body, '$.metadata.kind')) BETWEEN 1 AND 64;
      CREATE INDEX entries_kind ON entries (stream_id, kind, position) WHERE kind IS NOT NULL;
    `,
  },
  {
    version: 6,
    name: 'API tokens and web sessions, stored by hash',
    sql: `
      CREATE TABLE tokens (
        token_id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects (project_id),
        token_hash TEXT NOT NULL UNIQUE,
        read_only INTEGER NOT NULL CHECK (read_only IN (0, 1)),
        label TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      ) STRICT;
      CREATE TABLE sessions (
        session_hash TEXT PRIMARY KEY,
        token_id TEXT NOT NULL REFERENCES tokens (token_id),
        csrf_hash TEXT NOT NULL,
        expires_at TEXT NOT NULL
      ) STRICT;
    `,
  },
];
