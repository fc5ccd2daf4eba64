import { z } from 'zod';
import type { OperationDef } from './operations.js';
import { checkParam, type ValidateOptions } from './validate.js';

// A module of its own: it brings the parameter rules (and libphonenumber's metadata) with it, so
// code that needs only the API's schemas (the console's first bundle) does not load them.

/**
 * The input of an operation as a zod object, with the contract's rules: the console's forms and
 * the API's validation use this same schema. Every parameter is a required string.
 */
export function operationInputSchema(op: OperationDef, options: ValidateOptions = {}) {
  const shape: Record<string, z.ZodType<string>> = {};
  for (const param of op.params) {
    shape[param.name] = z
      .string({ error: `Missing parameter: ${param.name}.` })
      .superRefine((value, ctx) => {
        const checked = checkParam(param, value, options);
        if (!checked.ok) ctx.addIssue({ code: 'custom', message: checked.message });
      })
      .describe(param.description);
  }
  return z.object(shape);
}
