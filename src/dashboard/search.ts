import type { RunStatus } from '../domain/run-info';
import { FINISHED_STATUSES, GOING_STATUSES } from '../domain/run-info';
import { isUuid } from '../domain/uuid';

/** What `waiting:` accepts, and the wait each names. */
const WAITING: Record<string, RunsQuery['waitingFor']> = { event: 'event', input: 'input', sleep: 'sleep', child: 'children', deps: 'deps' };
const STATUSES: readonly string[] = [...GOING_STATUSES, ...FINISHED_STATUSES];

/** The filters a runs search asks for. */
export interface RunsQuery {
  key?: string;
  workflow?: string;
  status?: RunStatus[];
  id?: string;
  flowId?: string;
  parentId?: string;
  waitingFor?: 'event' | 'input' | 'sleep' | 'children' | 'deps';
}

/** A search the grammar refuses, with a message for the person who typed it. */
export class SearchError extends Error {}

/**
 * One `qualifier:value` or bare term: `key:article:42` (the first colon splits), `key:"a b"` (a
 * quoted value ends at a quote followed by a space or the end; an unquoted one may hold quotes).
 */
const TERM = /\s*(?:([A-Za-z]+):(?:"([^"]*)"(?=\s|$)|(\S*))|"([^"]*)"(?=\s|$)|(\S+))/y;

/**
 * Parses the runs search (`q`): space-separated `qualifier:value` terms (qualifiers `key`,
 * `workflow`, `status`, `id`, `flow`, `parent`, `waiting`) or a bare run id. Throws
 * {@link SearchError} for an unknown qualifier, a bad value or an unclosed quote.
 */
export function parseRunsSearch(q: string): RunsQuery {
  const out: RunsQuery = {};
  const text = q.trim();
  TERM.lastIndex = 0;
  while (TERM.lastIndex < text.length) {
    const start = TERM.lastIndex;
    const m = TERM.exec(text);
    if (!m || TERM.lastIndex === start) throw new SearchError(`cannot read the search from "${text.slice(start).trim()}" (is a quote left open?)`);
    const [, qualifier, quoted, plain, bareQuoted, bare] = m;
    if (qualifier !== undefined && plain?.startsWith('"')) throw new SearchError(`a quote is left open after "${qualifier}:"`);
    if (qualifier === undefined) {
      const term = bareQuoted ?? bare;
      if (bare?.startsWith('"')) throw new SearchError(`a quote is left open in ${term}`);
      if (!isUuid(term)) throw new SearchError(`"${term}" is not a run id; search with qualifier:value (key, workflow, status, id, flow, parent, waiting)`);
      out.id = term;
      continue;
    }
    apply(out, qualifier, quoted ?? plain);
  }
  return out;
}

function apply(out: RunsQuery, qualifier: string, value: string): void {
  if (value === '') throw new SearchError(`${qualifier}: needs a value`);
  switch (qualifier) {
    case 'key':
      out.key = value;
      return;
    case 'workflow':
      out.workflow = value;
      return;
    case 'status':
      if (!STATUSES.includes(value)) throw new SearchError(`status:${value} is not a status (${STATUSES.join(', ')})`);
      out.status = [...(out.status ?? []), value as RunStatus];
      return;
    case 'id':
    case 'parent': {
      if (!isUuid(value)) throw new SearchError(`${qualifier}:${value} is not a run id`);
      if (qualifier === 'id') out.id = value;
      else out.parentId = value;
      return;
    }
    case 'flow':
      out.flowId = value;
      return;
    case 'waiting':
      if (!(value in WAITING)) throw new SearchError(`waiting:${value} is not a wait (${Object.keys(WAITING).join(', ')})`);
      out.waitingFor = WAITING[value];
      return;
    default:
      throw new SearchError(`unknown qualifier "${qualifier}:" (use key, workflow, status, id, flow, parent or waiting)`);
  }
}

/** `value` as a search value: quoted when it holds a space (a value cannot hold a quote and a space both). */
export function searchValue(value: string): string {
  return /\s/.test(value) ? `"${value}"` : value;
}
