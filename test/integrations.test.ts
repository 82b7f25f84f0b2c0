/**
 * The files shipped for agents in integrations/: the Codex skill has the metadata Codex reads
 * (a name matching its folder, a description that says when to use it), and every `baton`
 * command it tells an agent to run is a real command with options this CLI accepts, so the
 * skill cannot drift from the CLI unnoticed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commands, findCommand, parseOptions } from '../src/cli/run.ts';

const skills = join(import.meta.dirname, '../integrations/codex/skills');

/** Words of one shell command line: spaces split, double or single quotes group. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g))
    words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}

/** The lines of the skill's sh blocks that run baton. */
function batonLines(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks.flatMap((block) => block.split('\n')).filter((line) => line.startsWith('baton '));
}

describe('the Codex skill', () => {
  const names = readdirSync(skills);

  it('is found where Codex looks for a skill, with its name and a description of when to use it', () => {
    expect(names).toEqual(['baton-handoff']);
    for (const name of names) {
      const markdown = readFileSync(join(skills, name, 'SKILL.md'), 'utf8');
      const front = /^---\n([\s\S]*?)\n---\n/.exec(markdown);
      expect(front, `${name}/SKILL.md starts with YAML front matter`).not.toBeNull();
      const fields = Object.fromEntries(
        front![1]!
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
      );
      expect(fields.name).toBe(name);
      expect(fields.name).toMatch(/^[a-z0-9-]{1,64}$/);
      expect(fields.description!.length).toBeGreaterThan(40);
      expect(fields.description!.length).toBeLessThanOrEqual(1024);
      expect(fields.description).toMatch(/Use when/);
    }
  });

  it('tells the agent only commands and options this CLI has', () => {
    const markdown = readFileSync(join(skills, 'baton-handoff', 'SKILL.md'), 'utf8');
    const lines = batonLines(markdown);
    const named = new Set<string>();
    for (const line of lines) {
      const words = shellWords(line).slice(1);
      const name = findCommand(words);
      expect(name, line).toBeDefined();
      named.add(name!);
      expect(
        () => parseOptions(name!, commands[name!]!, words.slice(name!.split(' ').length)),
        line,
      ).not.toThrow();
    }
    // The whole relay, each step one command.
    expect([...named].sort()).toEqual([
      'ack',
      'bind',
      'continue',
      'continuity',
      'handoff',
      'outcome',
      'report',
    ]);
  });

  it('would notice an option the CLI does not have', () => {
    const words = shellWords('baton handoff "Ship it" --stat "typo"').slice(1);
    expect(() => parseOptions('handoff', commands.handoff!, words.slice(1))).toThrow(/--stat/);
  });
});
