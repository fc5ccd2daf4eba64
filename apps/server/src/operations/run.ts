import { type OperationDef, type ValidateOptions, validateParams } from '@school/contract';

/** What an operation made of a call, before any binding turns it into a wire response. */
export type OperationResult =
  | { readonly outcome: 'ok'; readonly values: Readonly<Record<string, string>> }
  | {
      readonly outcome: 'client-error';
      /** The HTTP status the HTTP bindings answer with (asmx-compat.md §4). */
      readonly status: 400 | 403 | 404 | 429;
      readonly message: string;
      /** The parameter at fault, when one is. */
      readonly param?: string;
      /** Normalised values, when the input was valid and the operation itself refused. */
      readonly values?: Readonly<Record<string, string>>;
    };

export interface OperationRunner {
  /**
   * Validates and performs an operation. `read` returns a parameter as the caller sent it, or
   * undefined when absent. The same code serves every binding and the console.
   */
  run(op: OperationDef, read: (name: string) => string | undefined): Promise<OperationResult>;
}

export interface OperationRunnerOptions extends ValidateOptions {}

export function createOperationRunner(options: OperationRunnerOptions): OperationRunner {
  return {
    async run(op, read) {
      const validated = validateParams(op, read, options);
      if (!validated.ok) {
        return {
          outcome: 'client-error',
          status: 400,
          message: validated.error.message,
          param: validated.error.param,
        };
      }
      const { values } = validated;
      switch (op.name) {
        case 'GetBookPdfByTerm':
          // There is no book library yet: every lookup truthfully finds nothing.
          return {
            outcome: 'client-error',
            status: 404,
            message: `No book exists for term '${values.termId}' and class '${values.classId}'.`,
            values,
          };
        default:
          return { outcome: 'ok', values };
      }
    },
  };
}
