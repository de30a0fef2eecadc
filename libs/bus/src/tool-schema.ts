import { Ajv } from 'ajv';

/**
 * Checks that a tool's argument schema is JSON Schema a model API accepts: it compiles (draft-07, the
 * dialect of OpenAI's function parameters and of MCP tools) and describes an object. Returns why not,
 * or undefined.
 */
export function toolSchemaProblem(schema: Record<string, unknown>): string | undefined {
  if (schema.type !== 'object') return 'the argument schema must be an object schema ({"type": "object", ...})';
  try {
    // A fresh instance per check: compiled schemas are cached by the instance, and plugins' schemas
    // would pile up in a shared one.
    new Ajv({ strict: false, validateSchema: true, addUsedSchema: false }).compile(schema);
    return undefined;
  } catch (err) {
    return `the argument schema is not valid JSON Schema: ${(err as Error).message}`;
  }
}
