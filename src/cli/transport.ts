/**
 * One way for every command to call an operation, wherever it runs: `invoke(operationId, input)`
 * either runs the registry operation on the local store for one project, or calls a Baton
 * server through the typed client (the token decides the project there). Both answer the
 * operation's result or throw its BatonError, so commands have one code path.
 */
import type { AppDeps } from '../app/deps.ts';
import { findOperation } from '../app/operations.ts';
import { createClient } from '../client/index.ts';
import type { OperationId, OperationInput, OperationResult } from '../client/types.ts';
import { BatonError } from '../core/errors.ts';
import { parseRecord } from '../core/records.ts';

export interface Transport {
  /** For messages: the local project or the server's address. */
  readonly where: string;
  invoke<Id extends OperationId>(operationId: Id, input: OperationInput<Id>): Promise<OperationResult<Id>>;
}

/** Run registry operations on an open store, as the project's owner (a local principal). */
export function localTransport(deps: AppDeps, project_id: string, where: string): Transport {
  return {
    where: `project ${project_id} in ${where}`,
    async invoke(operationId, input) {
      const operation = findOperation(operationId);
      if (!operation) throw new BatonError('invalid_input', `no operation ${operationId}`, { operationId });
      // Validated as every surface validates it; the app function receives the input as sent.
      parseRecord(operation.input, input, operationId);
      return operation.run(deps, project_id, input) as Promise<OperationResult<typeof operationId>>;
    },
  };
}

export function serverTransport(baseUrl: string, token: string): Transport {
  const client = createClient({ baseUrl, token });
  return { where: baseUrl, invoke: (operationId, input) => client.invoke(operationId, input) };
}
