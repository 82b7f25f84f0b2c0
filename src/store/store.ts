/**
 * The Store is the only durable authority of Baton: projects, append-only streams of entries,
 * sources with exact references, retraction, content-addressed Prepared Handoffs and
 * compare-and-swap Handoff Revisions. Every backend implements this interface and passes
 * the one conformance suite; every projection is a function of what it returns.
 */
import type { Digest } from '../core/canonical.ts';
import type { JsonObject } from '../core/json.ts';
import type { Entry, EntryInput } from '../core/ledger/entry.ts';
import type { ScopeKey, StreamKey } from '../core/ledger/names.ts';
import type { Revision } from '../core/ledger/revision.ts';
import type { AppendResult, SourceReceipt, SourceRef, UnavailableReason } from '../core/ledger/source.ts';

export interface Project {
  readonly project_id: string;
  readonly created_at: string;
}

export interface StreamInfo {
  readonly stream: StreamKey;
  /** Position of the last entry; 0 for none. */
  readonly head: number;
  readonly created_at: string;
}

export interface SourceInput {
  readonly source_id: string;
  readonly content: EntryInput['content'];
  readonly metadata?: EntryInput['metadata'];
}

export interface PositionRange {
  /** First position to read, inclusive; default 1. */
  readonly from?: number;
  /** Last position to read, inclusive; default the head. */
  readonly to?: number;
  /** Only entries whose metadata.kind is one of these (read through an index). */
  readonly kinds?: readonly string[];
}

export interface AppendOptions {
  readonly expected_head?: number;
}

export type StreamListener = (change: { readonly stream: StreamKey; readonly head: number }) => void;

/** Whether an exact ref is readable: its identity only, never its content. */
export type SourceAvailability =
  { readonly status: 'available' } | { readonly status: 'unavailable'; readonly reason: UnavailableReason };

/** An entry as an export carries it: everything but the store-local global sequence. */
export type PortableEntry = Omit<Entry, 'stream' | 'global_seq'>;

export interface Store {
  readonly backend: 'sqlite' | 'postgres';
  /**
   * The absolute paths of this store's files on this machine (a SQLite database and its -wal,
   * -shm and -journal files, whether they exist now or not), which a session's criteria must
   * never read: they hold every project's records. Empty for PostgreSQL and `:memory:`.
   */
  readonly privateFiles: readonly string[];

  /** Create a project, or return it when it exists already. */
  createProject(project_id: string): Promise<Project>;
  /** not_found when the project does not exist. */
  getProject(project_id: string): Promise<Project>;
  listProjects(): Promise<Project[]>;
  listStreams(project_id: string): Promise<StreamInfo[]>;
  /** not_found when the stream does not exist. */
  getStream(stream: StreamKey): Promise<StreamInfo>;

  /**
   * Append entries atomically at the next positions of the stream, creating the stream on
   * its first append. Entries with a source_id already stored are not written again. With
   * expected_head, the append happens only if the stream's head is still that position (0 for
   * a stream with no entries); otherwise revision_conflict carrying the actual head.
   */
  append(stream: StreamKey, entries: readonly EntryInput[], options?: AppendOptions): Promise<AppendResult[]>;
  /**
   * Be told, after each commit that appended to a stream, its new head. SQLite tells the
   * listeners of this process; PostgreSQL tells every process's listeners (LISTEN/NOTIFY).
   * A listener may be told of a change it has seen; readers re-read from their own position.
   * It is not told of every change: not of another process's SQLite commits, nor of commits
   * made while PostgreSQL's LISTEN connection reconnects. A reader that must not fall behind
   * also re-reads now and then (the event stream does on each heartbeat).
   */
  subscribe(listener: StreamListener): Promise<() => Promise<void>>;
  /** Capture one source on a scope stream; idempotent by source_id and digest. */
  captureSource(scope: ScopeKey, source: SourceInput): Promise<SourceReceipt>;
  /** Entries by position, in order, read page by page. */
  readStream(stream: StreamKey, range?: PositionRange): AsyncIterable<Entry>;
  /**
   * The entry a source_id names in a scope, whatever its digest (a retracted one as its
   * tombstone); undefined when the scope holds none. For a retry to find what it stored.
   */
  findSource(scope: ScopeKey, source_id: string): Promise<Entry | undefined>;
  /** One source by exact ref: not_found with data.reason missing, digest_mismatch or retracted. */
  readSource(project_id: string, ref: SourceRef): Promise<Entry>;
  /**
   * Whether an exact ref is readable, and why not: reads the source's identity (digest,
   * retraction), never its content, so checking a large cited log costs what a small one does.
   */
  checkSource(project_id: string, ref: SourceRef): Promise<SourceAvailability>;
  /** Purge a source's content; the tombstone keeps source_id, digest and position. */
  retractSource(scope: ScopeKey, source_id: string, reason: string): Promise<Entry>;

  /** Store a Prepared Handoff body under its digest (idempotent). */
  putPrepared(project_id: string, body: JsonObject): Promise<Digest>;
  /** not_found when no body has that digest in the project. */
  getPrepared(project_id: string, digest: Digest): Promise<JsonObject>;
  /**
   * Publish the next Handoff Revision of a scope if its head is still expected_head (0 when
   * none); otherwise revision_conflict carrying the actual head. A body already committed in
   * the scope returns the revision it produced, whatever the head: a retry after an
   * unconfirmed commit never makes a duplicate.
   */
  commitRevision(scope: ScopeKey, expected_head: number, body: JsonObject): Promise<Revision>;
  /** The latest revision number of a scope; 0 when none. */
  revisionHead(scope: ScopeKey): Promise<number>;
  /** not_found when that revision does not exist. */
  getRevision(scope: ScopeKey, revision: number): Promise<Revision>;
  /** Revisions newest first, at most limit (default 20). */
  listRevisions(scope: ScopeKey, options?: { limit?: number; through?: number }): Promise<Revision[]>;

  /**
   * Write exported entries into a stream that does not exist yet, keeping positions, digests,
   * times and tombstones; conflict when the stream exists. Atomic: with createProject, the
   * stream's project is created in the same transaction when it does not exist, so an import
   * the store refuses leaves no project behind.
   */
  importEntries(
    stream: StreamKey,
    entries: readonly PortableEntry[],
    options?: ImportOptions,
  ): Promise<StreamInfo>;

  /** Store an API token by the hash of its secret; the secret itself is never stored. */
  createToken(token: NewToken): Promise<TokenRecord>;
  /** The live (not revoked) token with this secret hash, if any. */
  findToken(token_hash: string): Promise<TokenRecord | undefined>;
  listTokens(project_id: string): Promise<TokenRecord[]>;
  /** not_found when no token has that id in the project. */
  revokeToken(project_id: string, token_id: string): Promise<TokenRecord>;

  /**
   * A web session for a token, by the hash of its cookie secret. In the same write, sessions
   * expired at `now` are deleted, and the token keeps only its sessionsPerToken newest
   * (latest expires_at): a stream of logins cannot grow the table without bound.
   */
  createSession(session: NewSession, now: string): Promise<void>;
  /** The session with this hash whose token is still live and which has not expired at `now`. */
  findSession(session_hash: string, now: string): Promise<SessionRecord | undefined>;
  deleteSession(session_hash: string): Promise<void>;

  close(): Promise<void>;
}

export interface ImportOptions {
  /** Create the stream's project if it does not exist, in the import's transaction. */
  readonly createProject?: boolean;
}

export interface NewToken {
  readonly token_id: string;
  readonly project_id: string;
  readonly token_hash: string;
  readonly read_only: boolean;
  readonly label: string;
}

export interface TokenRecord extends NewToken {
  readonly created_at: string;
  readonly revoked_at: string | null;
}

/** How many web sessions one token keeps; a login beyond it ends the token's oldest session. */
export const sessionsPerToken = 20;

export interface NewSession {
  readonly session_hash: string;
  readonly token_id: string;
  readonly csrf_hash: string;
  readonly expires_at: string;
}

export interface SessionRecord extends NewSession {
  readonly token: TokenRecord;
}
