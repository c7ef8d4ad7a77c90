import type { DefinitionRecord } from '../definition/definition-record';
import type { Queryable } from './db';

/** A row of `workflow_definitions`: a definition as the last node that booted with it wrote it. */
export interface DefinitionRow extends DefinitionRecord {
  /** The node that wrote it. */
  nodeId: string;
  updatedAt: Date;
}

/**
 * Statements on `workflow_definitions` (migration DurableWorkflowDefinitions1733040016000): each
 * node writes its definitions at boot, the last writer wins; the CLI reads them.
 */
export class DefinitionsStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    const columns = `workflow, reuse, on_duplicate AS "onDuplicate", debounce, steps, hash, node_id AS "nodeId", updated_at AS "updatedAt"`;
    this.sql = {
      // one statement for every workflow of the node ($1: the records, $2: the node); rows taken in
      // the order of their names, so that nodes booting at once lock them in the same order
      write: `
        INSERT INTO ${S}.workflow_definitions (workflow, reuse, on_duplicate, debounce, steps, hash, node_id)
        SELECT d.workflow, d.reuse, d."onDuplicate", d.debounce, ARRAY(SELECT jsonb_array_elements_text(d.steps)), d.hash, $2
        FROM jsonb_to_recordset($1::jsonb) AS d (workflow text, reuse text, "onDuplicate" jsonb, debounce jsonb, steps jsonb, hash text)
        ORDER BY d.workflow
        ON CONFLICT (workflow) DO UPDATE SET reuse = EXCLUDED.reuse, on_duplicate = EXCLUDED.on_duplicate, debounce = EXCLUDED.debounce,
          steps = EXCLUDED.steps, hash = EXCLUDED.hash, node_id = EXCLUDED.node_id, updated_at = now()`,
      get: `SELECT ${columns} FROM ${S}.workflow_definitions WHERE workflow = $1`,
      list: `SELECT ${columns} FROM ${S}.workflow_definitions ORDER BY workflow`,
    };
  }

  /** Writes the definitions of node `nodeId` over those stored under the same names. */
  async write(q: Queryable, nodeId: string, records: DefinitionRecord[]): Promise<void> {
    await q.query(this.sql.write, [JSON.stringify(records), nodeId]);
  }

  /** The stored definition of `workflow`, or undefined. */
  async get(q: Queryable, workflow: string): Promise<DefinitionRow | undefined> {
    const [row] = await q.query<DefinitionRow>(this.sql.get, [workflow]);
    return row;
  }

  /** Every stored definition, by name. */
  list(q: Queryable): Promise<DefinitionRow[]> {
    return q.query<DefinitionRow>(this.sql.list);
  }
}
