/** What every operation gets: the one Store and a clock. Surfaces build it once. */
import type { Clock } from '../core/clock.ts';
import type { WorkConfig } from '../core/work/config.ts';
import type { Store } from '../store/store.ts';

export interface AppDeps {
  readonly store: Store;
  readonly clock: Clock;
  /** The `[work]` configuration; the spec's defaults when absent. */
  readonly work?: WorkConfig;
}
