/**
 * A child session's place under its parent: it works one item for the parent and holds no more
 * authority than the parent does. Its capabilities are the parent's, narrowed by what the caller
 * asks for (a field left out is inherited; one that would reach beyond the parent is refused),
 * and a session that is itself a child is never a parent: a child cannot start children of its own.
 */
import { BatonError } from '../errors.ts';
import type { SessionCapabilities, SessionHeader } from './session.ts';

type CapabilityList = 'tools' | 'flows' | 'capabilities' | 'owners';

/**
 * The capabilities of a new child of `parent`: `given` is what the caller asked for (parsed,
 * with defaults), `named` the fields the caller actually wrote. Throws invalid_input, rule
 * `nested_child` when the parent is itself a child, or `capability_escalation` naming the field
 * when the child would hold what the parent does not.
 */
export function childCapabilities(
  parent: Pick<SessionHeader, 'session_id' | 'parent_session_id' | 'capabilities'>,
  given: SessionCapabilities | undefined,
  named: ReadonlySet<string>,
): SessionCapabilities {
  if (parent.parent_session_id !== null) {
    throw new BatonError(
      'invalid_input',
      `session ${parent.session_id} is itself a child of ${parent.parent_session_id}; a child session cannot start another`,
      {
        rule: 'nested_child',
        parent_session_id: parent.session_id,
        grandparent_session_id: parent.parent_session_id,
      },
    );
  }
  const inherited = parent.capabilities;
  const escalation = (field: string, value: unknown) =>
    new BatonError(
      'invalid_input',
      `a child session holds no more than its parent ${parent.session_id}: ${field} ${JSON.stringify(value)} is beyond it`,
      { rule: 'capability_escalation', field, value, parent_session_id: parent.session_id },
    );
  const write = given !== undefined && named.has('write') ? given.write : inherited.write;
  if (write && !inherited.write) throw escalation('write', true);
  function narrow<T extends string>(
    field: CapabilityList,
    allowed: readonly T[],
    asked: readonly T[] | undefined,
  ): T[] {
    const chosen = asked !== undefined && named.has(field) ? asked : allowed;
    const beyond = chosen.find((value) => !allowed.includes(value));
    if (beyond !== undefined) throw escalation(field, beyond);
    return [...chosen];
  }
  return {
    ...inherited,
    write,
    tools: narrow('tools', inherited.tools, given?.tools),
    flows: narrow('flows', inherited.flows, given?.flows),
    capabilities: narrow('capabilities', inherited.capabilities, given?.capabilities),
    owners: narrow('owners', inherited.owners, given?.owners),
  };
}
