#!/usr/bin/env node
/** Entry point of the `baton` command. */
import { run } from './run.ts';

/**
 * Standard output that stops writing once it fails instead of crashing: a reader that closed
 * the pipe (`baton status | head -1`) ends the output quietly, and a write that fails otherwise
 * (a full disk) is said on stderr and makes the exit code 1. The command itself runs to its end,
 * so a write it began is never cut off halfway.
 */
let outputFailed = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (outputFailed) return;
  outputFailed = true;
  if (error.code === 'EPIPE') return;
  process.stderr.write(`baton: the output could not be written: ${error.message}\n`);
  process.exitCode = 1;
});
process.stderr.on('error', () => {
  // Nowhere left to say anything.
});

const code = await run(process.argv.slice(2), {
  out: (text) => {
    if (!outputFailed) process.stdout.write(text);
  },
  err: (text) => process.stderr.write(text),
  flushed: () =>
    new Promise((resolve) => {
      if (outputFailed) resolve(false);
      else process.stdout.write('', (error) => resolve(!error && !outputFailed));
    }),
  env: process.env,
});
if (!(outputFailed && process.exitCode === 1)) process.exitCode = code;
