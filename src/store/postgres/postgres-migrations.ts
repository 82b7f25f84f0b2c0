/**
 * The PostgreSQL schema, one migration per step, matching the SQLite steps table for table.
 * Never edit a released step: add the next one. Names and ids use the "C" collation so they
 * sort byte-wise, as SQLite sorts them; times are the clock's ISO strings, stored as text.
 */
import type { Migration } from '../migrations.ts';

export const postgresMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'projects, streams and entries',
    sql: `
      CREATE TABLE projects (
        project_id text COLLATE "C" PRIMARY KEY,
        created_at text NOT NULL
      );
      CREATE TABLE streams (
        stream_id bigserial PRIMARY KEY,
        project_id text COLLATE "C" NOT NULL REFERENCES projects (project_id),
        kind text COLLATE "C" NOT NULL CHECK (kind IN ('scope', 'session')),
        name text COLLATE "C" NOT NULL,
        head integer NOT NULL DEFAULT 0,
        created_at text NOT NULL,
        UNIQUE (project_id, kind, name)
      );
      CREATE TABLE entries (
        global_seq bigserial PRIMARY KEY,
        stream_id bigint NOT NULL REFERENCES streams (stream_id),
        position integer NOT NULL,
        type text NOT NULL,
        source_id text COLLATE "C",
        digest text NOT NULL,
        body text,
        recorded_at text NOT NULL,
        retracted_at text,
        retraction_reason text,
        UNIQUE (stream_id, position)
      );
      CREATE UNIQUE INDEX entries_source ON entries (stream_id, source_id) WHERE source_id IS NOT NULL;
    `,
  },
  {
    version: 2,
    name: 'prepared handoffs and handoff revisions',
    sql: `
      CREATE TABLE prepared_handoffs (
        project_id text COLLATE "C" NOT NULL REFERENCES projects (project_id),
        digest text COLLATE "C" NOT NULL,
        body text NOT NULL,
        created_at text NOT NULL,
        PRIMARY KEY (project_id, digest)
      );
      CREATE TABLE handoff_revisions (
        stream_id bigint NOT NULL REFERENCES streams (stream_id),
        revision integer NOT NULL CHECK (revision >= 1),
        prepared_digest text NOT NULL,
        committed_at text NOT NULL,
        PRIMARY KEY (stream_id, revision)
      );
    `,
  },
  {
    version: 3,
    name: 'each prepared handoff committed at most once per scope',
    sql: `CREATE UNIQUE INDEX handoff_revisions_prepared ON handoff_revisions (stream_id, prepared_digest);`,
  },
  {
    version: 4,
    name: 'entries indexed by metadata.kind',
    sql: `
      ALTER TABLE entries ADD COLUMN kind text COLLATE "C";
      UPDATE entries SET kind = body::jsonb -> 'metadata' ->> 'kind'
        WHERE body IS NOT NULL AND jsonb_typeof(body::jsonb -> 'metadata' -> 'kind') = 'string'
          AND length(body::jsonb -> 'metadata' ->> 'kind') BETWEEN 1 AND 64;
      CREATE INDEX entries_kind ON entries (stream_id, kind, position) WHERE kind IS NOT NULL;
    `,
  },
  {
    version: 5,
    name: 'API tokens and web sessions, stored by hash',
    sql: `
      CREATE TABLE tokens (
        token_id text COLLATE "C" PRIMARY KEY,
        project_id text COLLATE "C" NOT NULL REFERENCES projects (project_id),
        token_hash text COLLATE "C" NOT NULL UNIQUE,
        read_only boolean NOT NULL,
        label text COLLATE "C" NOT NULL,
        created_at text COLLATE "C" NOT NULL,
        revoked_at text COLLATE "C"
      );
      CREATE TABLE sessions (
        session_hash text COLLATE "C" PRIMARY KEY,
        token_id text COLLATE "C" NOT NULL REFERENCES tokens (token_id),
        csrf_hash text COLLATE "C" NOT NULL,
        expires_at text COLLATE "C" NOT NULL
      );
    `,
  },
];
