/**
 * How a batch of transitions travels to the `transition` statement: a JSON array of arrays, each
 * transition's fields by position in {@link TRANSITION_FIELDS} order. Postgres reads a field by
 * position (`e->>3`) for about half the cost of a recordset of named keys, and the payload is
 * smaller on both sides.
 */
import type { Transition } from './runs.types';

/** Each field of a {@link Transition} with its SQL type, in the order they are sent. */
const FIELDS = [
  ['id', 'uuid'],
  ['epoch', 'integer'],
  ['status', 'text'],
  ['step', 'integer'],
  ['attempt', 'integer'],
  ['context', 'jsonb'],
  ['result', 'jsonb'],
  ['results', 'jsonb'],
  ['error', 'jsonb'],
  ['delay_ms', 'bigint'],
  ['final', 'boolean'],
  ['wait_kind', 'text'],
  ['wait_name', 'text'],
  ['wake_at', 'timestamptz'],
  ['comp_step', 'integer'],
  ['release', 'boolean'],
  ['tried_step', 'integer'],
  ['tried_attempt', 'integer'],
  ['tried_status', 'text'],
  ['tried_from_ms', 'bigint'],
  ['tried_to_ms', 'bigint'],
  ['progress', 'jsonb'],
] as const satisfies readonly (readonly [keyof Transition, string])[];

/** The fields' names, in the order they are sent. */
export const TRANSITION_FIELDS: readonly (keyof Transition)[] = FIELDS.map(([name]) => name);

/**
 * The SELECT list reading one sent transition (`alias`, a jsonb array) back into named, typed
 * columns. A JSON null (or a field left out) is SQL NULL, for jsonb fields too.
 */
export const transitionFields = (alias: string): string =>
  FIELDS.map(([name, type], i) =>
    type === 'jsonb'
      ? `nullif(${alias}->${i}, 'null'::jsonb) AS ${name}`
      : type === 'text'
        ? `${alias}->>${i} AS ${name}`
        : `(${alias}->>${i})::${type} AS ${name}`,
  ).join(', ');

/**
 * One transition's fields in {@link TRANSITION_FIELDS} order, written out (a read of each field by
 * name, not by a computed key: this runs for every checkpoint and completion).
 */
export const transitionTuple = (t: Transition): unknown[] => [
  t.id,
  t.epoch,
  t.status,
  t.step,
  t.attempt,
  t.context,
  t.result,
  t.results,
  t.error,
  t.delay_ms,
  t.final,
  t.wait_kind,
  t.wait_name,
  t.wake_at,
  t.comp_step,
  t.release,
  t.tried_step,
  t.tried_attempt,
  t.tried_status,
  t.tried_from_ms,
  t.tried_to_ms,
  t.progress,
];

/** The batch as the statement's `$1`. */
export const encodeTransitions = (ts: readonly Transition[]): string => JSON.stringify(ts.map(transitionTuple));
