import { Ajv } from 'ajv';

/**
 * Checks that a plugin's schema (a tool's arguments, its settings) is JSON Schema a model API and a
 * form accept: it compiles (draft-07, the dialect of OpenAI's function parameters and of MCP tools)
 * and describes an object. Returns why not, or undefined.
 */
export function objectSchemaProblem(schema: Record<string, unknown>): string | undefined {
  if (schema.type !== 'object') return 'must be an object schema ({"type": "object", ...})';
  try {
    // A fresh instance per check: compiled schemas are cached by the instance, and plugins' schemas
    // would pile up in a shared one.
    new Ajv({ strict: false, validateSchema: true, addUsedSchema: false }).compile(schema);
    return undefined;
  } catch (err) {
    return `is not valid JSON Schema: ${(err as Error).message}`;
  }
}
