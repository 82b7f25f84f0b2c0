/**
 * What the server refused in an input, field by field: an `invalid_input` answer's issues, each
 * a wire path (`current_state.1.text`) and a message. A form maps the paths to its own fields,
 * shows each message under its field and moves the focus to the first one.
 */
import { ApiError } from './api.ts';

export interface Issue {
  readonly path: string;
  readonly message: string;
}

export function issuesOf(error: unknown): readonly Issue[] {
  if (!(error instanceof ApiError) || error.code !== 'invalid_input') return [];
  const issues = error.details.issues;
  if (!Array.isArray(issues)) return [];
  return issues.flatMap((issue: unknown) => {
    const { path, message } = (issue ?? {}) as Partial<Issue>;
    return typeof path === 'string' && typeof message === 'string' ? [{ path, message }] : [];
  });
}

/** The messages of a form's fields: each issue under the field `fieldOf` names (the first wins). */
export function fieldErrors(
  issues: readonly Issue[],
  fieldOf: (path: string) => string | undefined,
): Readonly<Record<string, string>> {
  const errors: Record<string, string> = {};
  for (const issue of issues) {
    const field = fieldOf(issue.path);
    if (field !== undefined && errors[field] === undefined) errors[field] = issue.message;
  }
  return errors;
}
