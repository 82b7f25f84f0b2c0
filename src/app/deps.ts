/** What every operation gets: the one Store and a clock. Surfaces build it once. */
import type { Clock } from '../core/clock.ts';
import type { WorkConfig } from '../core/work/config.ts';
import type { Flows } from '../core/work/flows.ts';
import type { SemanticJudge } from '../core/work/judge.ts';
import type { Store } from '../store/store.ts';

export interface AppDeps {
  readonly store: Store;
  readonly clock: Clock;
  /** The `[work]` configuration; the spec's defaults when absent. */
  readonly work?: WorkConfig;
  /**
   * Absolute folders a session's workspace must lie in; any folder when absent. A server sets
   * them (its own workspace and each --workspace-root), so that no client can make a session
   * work, and its criteria run, in any folder of the server's machine.
   */
  readonly workspace_roots?: readonly string[];
  /** The read-only judge of semantic criteria (`[judge]` in baton.toml); without one they stay unknown. */
  readonly judge?: SemanticJudge;
  /** The static flows `[flows]` in baton.toml declares (docs/flows.md); none when absent. */
  readonly flows?: Flows;
}
