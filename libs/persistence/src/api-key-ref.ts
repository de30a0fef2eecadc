// LlmModel.apiKeyRef says where the key is, never what it is: the database and the bus never hold
// secrets, and each runner resolves the reference from its own environment (a Kubernetes Secret).

/** The key for `ref` (`env:NAME`, or empty for none). Throws when the variable is unset. */
export function resolveApiKey(ref: string, env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  if (ref === '') return undefined;
  const match = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(ref);
  if (!match) throw new Error(`unsupported apiKeyRef ${JSON.stringify(ref)} (expected env:NAME or empty)`);
  const value = env[match[1]];
  if (value === undefined) throw new Error(`environment variable ${match[1]} (apiKeyRef ${ref}) is not set`);
  return value;
}
