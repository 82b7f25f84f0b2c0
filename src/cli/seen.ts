/**
 * What `baton continue` last showed in this Git work tree: per place (the local database or a
 * server) and workstream, the exact revision and digest, in `<git-dir>/baton/seen.json` beside
 * the binding, private to this clone. `baton ack` without --revision acknowledges the latest
 * revision only when it is the one last shown, so a receiver never accepts a revision they have
 * not read (the spec's "mismatch with the Report card blocks all choices"). Outside a Git work
 * tree nothing is kept, and ack says which revision it took.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { gitDir } from './binding.ts';

const seenSchema = z.looseObject({
  schema: z.literal('baton.seen-handoffs/v1'),
  seen: z.record(
    z.string(),
    z.looseObject({ revision: z.number().int().min(1), digest: z.string(), shown_at: z.string() }),
  ),
});

type SeenFile = z.output<typeof seenSchema>;

export interface Seen {
  readonly revision: number;
  readonly digest: string;
}

function key(where: string, scope_id: string): string {
  return `${where}\n${scope_id}`;
}

async function load(path: string): Promise<SeenFile> {
  try {
    const parsed = seenSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // Missing or damaged: nothing was seen, and the next continue writes it anew.
  }
  return { schema: 'baton.seen-handoffs/v1', seen: {} };
}

async function seenPath(cwd: string): Promise<string | undefined> {
  const dir = await gitDir(cwd);
  return dir === undefined ? undefined : join(dir, 'baton', 'seen.json');
}

/** The revision `baton continue` last showed for this place and workstream, if any. */
export async function lastSeen(cwd: string, where: string, scope_id: string): Promise<Seen | undefined> {
  const path = await seenPath(cwd);
  if (path === undefined) return undefined;
  return (await load(path)).seen[key(where, scope_id)];
}

/** Remember the exact revision `baton continue` showed; a no-op outside a Git work tree. */
export async function recordSeen(cwd: string, where: string, scope_id: string, shown: Seen): Promise<void> {
  const path = await seenPath(cwd);
  if (path === undefined) return;
  const file = await load(path);
  file.seen[key(where, scope_id)] = {
    revision: shown.revision,
    digest: shown.digest,
    shown_at: new Date().toISOString(),
  };
  await mkdir(join(path, '..'), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}
