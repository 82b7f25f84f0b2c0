/**
 * Builds the Handoff Report workspace with Vite into one folder (web/dist by default, dist/web
 * for the package) and prints the JavaScript a first load fetches, gzipped; the build fails when
 * that is over 200 kB. `--if-stale` builds only when a source is newer than the last build.
 *
 *   node --experimental-strip-types web/build.ts [--out DIR] [--if-stale]
 */
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { build } from 'vite';

export const webDir = dirname(fileURLToPath(import.meta.url));
export const defaultOutDir = join(webDir, 'dist');
/** The first-load budget: JavaScript fetched by index.html, gzipped, in bytes (200 kB). */
export const firstLoadLimit = 200_000;

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))));
}

/** Whether outDir lacks a build or any page source changed after it. */
export function isStale(outDir: string = defaultOutDir): boolean {
  const built = join(outDir, 'index.html');
  if (!existsSync(built)) return true;
  const sources = ['index.html', 'src', 'public', 'build.ts'].map((name) => join(webDir, name));
  return Math.max(...sources.map(newestMtime)) > statSync(built).mtimeMs;
}

export interface FirstLoad {
  readonly files: readonly string[];
  readonly bytes: number;
  readonly gzipped: number;
}

/** The scripts index.html loads at once (entry and module preloads), raw and gzipped. */
export function measureFirstLoad(outDir: string): FirstLoad {
  const html = readFileSync(join(outDir, 'index.html'), 'utf8');
  const files = [
    ...html.matchAll(/<script[^>]*\ssrc="([^"]+\.js)"/g),
    ...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+\.js)"/g),
  ].map((match) => match[1]!);
  let bytes = 0;
  let gzipped = 0;
  for (const file of new Set(files)) {
    const content = readFileSync(join(outDir, file.replace(/^\//, '')));
    bytes += content.length;
    gzipped += gzipSync(content, { level: 9 }).length;
  }
  return { files, bytes, gzipped };
}

/**
 * Build into a fresh folder and swap it in for outDir only when it is complete and within
 * budget, so a server (or a parallel test run) never serves a half-written build.
 */
export async function buildWeb(outDir: string = defaultOutDir): Promise<FirstLoad> {
  // Vite bundles React's development build when NODE_ENV says so (vitest sets it to test).
  process.env.NODE_ENV = 'production';
  // Inside node_modules (ignored everywhere, and on the same file system, so the rename is one step).
  const building = join(webDir, '..', 'node_modules', '.cache', `baton-web-${process.pid}`);
  try {
    await build({
      mode: 'production',
      configFile: false,
      root: webDir,
      logLevel: 'warn',
      plugins: [react()],
      build: {
        outDir: building,
        emptyOutDir: true,
        modulePreload: { polyfill: false },
        target: 'es2022',
      },
    });
    const firstLoad = measureFirstLoad(building);
    const kb = (n: number) => `${(n / 1000).toFixed(1)} kB`;
    process.stdout.write(
      `web: first-load JavaScript ${kb(firstLoad.gzipped)} gzipped (limit ${kb(firstLoadLimit)}), ` +
        `${kb(firstLoad.bytes)} raw, in ${relative(process.cwd(), outDir) || '.'}\n`,
    );
    if (firstLoad.files.length === 0) throw new Error('web: index.html loads no script; the build is broken');
    if (firstLoad.gzipped > firstLoadLimit) {
      throw new Error(
        `web: first-load JavaScript is ${kb(firstLoad.gzipped)} gzipped, over ${kb(firstLoadLimit)}`,
      );
    }
    rmSync(outDir, { recursive: true, force: true });
    renameSync(building, outDir);
    return firstLoad;
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, 'if-stale': { type: 'boolean' } },
  });
  const outDir = values.out ? resolve(values.out) : defaultOutDir;
  if (values['if-stale'] && !isStale(outDir)) {
    process.stdout.write(`web: ${relative(process.cwd(), outDir)} is up to date\n`);
  } else {
    try {
      await buildWeb(outDir);
    } catch (error) {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  }
}
