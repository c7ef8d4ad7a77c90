/** Shortest `nodeTimeout`, in ms. */
export const MIN_NODE_TIMEOUT_MS = 20;

/** What a schema name must be: a lower-case SQL identifier (it is quoted into statements). */
export const SCHEMA_NAME = { pattern: /^[a-z_][a-z0-9_]*$/, maxLength: 48, message: 'schema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*)' };
