import { ValidationError } from 'class-validator';
import { DurableValidationError } from '../errors';
import { GOING_HOLDER_TABLE, REUSE_TABLE, type ReusePolicy } from './keys.policy';
import { isUuid } from './uuid';

/** Largest input or payload accepted, as JSON text (1 MiB). */
export const MAX_JSON_BYTES = 1 << 20;

/** Deepest nesting of arrays and objects accepted in an input or payload (PostgreSQL reads deeper, but not much). */
const MAX_JSON_DEPTH = 1_000;

/** One class-validator-shaped problem with `property`. */
export function problem(property: string, value: unknown, constraint: string, message: string): ValidationError {
  const e = new ValidationError();
  e.property = property;
  e.value = value;
  e.constraints = { [constraint]: message };
  e.children = [];
  return e;
}

/** Why `value` is not a run id (a UUID), or undefined when it is one (or absent). */
export function uuidProblem(value: unknown, property: string): ValidationError | undefined {
  if (value === undefined || value === null || isUuid(value)) return undefined;
  return problem(property, value, 'isUuid', `${property} must be a run id (a UUID)`);
}

/** Why `name` is not a name (an event or input name, a `by`: a string of 1 to 255 bytes), or undefined. */
export function nameProblem(name: unknown, property = 'name'): ValidationError | undefined {
  return textProblem(name, property, 255, 'isName');
}

/**
 * Why `value` is not a string of 1 to `maxBytes` bytes of UTF-8 that Postgres can store (no NUL,
 * no lone surrogate), or undefined; `constraint` names the length check.
 */
export function textProblem(value: unknown, property: string, maxBytes: number, constraint = 'isText'): ValidationError | undefined {
  if (typeof value !== 'string' || value.length === 0 || Buffer.byteLength(value, 'utf8') > maxBytes) {
    return problem(property, value, constraint, `${property} must be a string of 1 to ${maxBytes} bytes`);
  }
  return storableTextProblem(value, property);
}

/** Why `value` is not a text Postgres can store (a string, maybe empty, without NUL or a lone surrogate; absent: none), or undefined. */
export function storableTextProblem(value: unknown, property: string): ValidationError | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return problem(property, value, 'isString', `${property} must be a string`);
  const unstorable = stringProblem(value, property);
  return unstorable ? problem(property, value, 'isStorable', unstorable) : undefined;
}

/**
 * Why `value` is not a plain object of options (`what`: its name, `known`: the option names), or
 * undefined when it is one or (`absentOk`) undefined or null: a key or a date passed where the
 * options go (plain JavaScript) would otherwise be ignored.
 */
export function optionsObjectProblem(value: unknown, what: string, known: readonly string[], absentOk = true): ValidationError | undefined {
  if (absentOk && (value === undefined || value === null)) return undefined;
  const proto: unknown = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : undefined;
  // a plain object (not an array, a Date, a Map…)
  if (proto === Object.prototype || proto === null) return undefined;
  return problem(what, value, 'isObject', `${what} must be an object of options (${known.join(', ')})`);
}

/**
 * Why `manager` is not the `EntityManager` of an open transaction (a TypeORM manager whose query
 * runner is in a transaction), or undefined when it is one or absent: a start given anything else
 * (the `DataSource`, its own `manager`, a finished transaction's) would commit on its own, outside
 * the transaction its caller meant it to join.
 */
export function managerProblem(manager: unknown): ValidationError | undefined {
  if (manager === undefined || manager === null) return undefined;
  const runner = (manager as { queryRunner?: { isTransactionActive?: unknown } }).queryRunner;
  if (typeof (manager as { query?: unknown }).query === 'function' && runner?.isTransactionActive === true) return undefined;
  const message = 'manager must be the EntityManager of an open transaction (the one dataSource.transaction passes to its callback)';
  return problem('manager', manager, 'isTransactionManager', message);
}

/**
 * Why `value` is not options of `known` names: not a plain object (`optionsObjectProblem`, null and
 * undefined being none), or an unknown name among them.
 */
export function optionsProblems(value: unknown, what: string, known: readonly string[]): (ValidationError | undefined)[] {
  return [optionsObjectProblem(value, what, known), ...unknownOptionProblems(value, known)];
}

/** Why `value` is not an array, or undefined. */
export function arrayProblem(value: unknown, property: string): ValidationError | undefined {
  return Array.isArray(value) ? undefined : problem(property, value, 'isArray', `${property} must be an array`);
}

/** NUL, or a UTF-16 surrogate without its pair: Postgres text and jsonb cannot hold either. */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
export const UNSTORABLE_RE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why the string cannot be stored by Postgres, or undefined. */
function stringProblem(s: string, path: string): string | undefined {
  if (!UNSTORABLE_RE.test(s)) return undefined;
  return `${path} holds a NUL character or an unpaired UTF-16 surrogate, which Postgres cannot store`;
}

/**
 * Why `key` is not a valid key (a string of 1 to 255 bytes; null/undefined = no key), or undefined.
 * `noKey`: how the caller gives no key, told after the size rule (default the API's `use null for
 * no key`); `false` for a caller that cannot give none (a command line).
 */
export function keyProblem(key: unknown, property = 'key', noKey: string | false = 'use null for no key'): ValidationError | undefined {
  if (key === null || key === undefined) return undefined;
  if (typeof key !== 'string') return problem(property, key, 'isString', `${property} must be a string or null`);
  const unstorable = stringProblem(key, property);
  if (unstorable) return problem(property, key, 'isStorable', unstorable);
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes < 1 || bytes > 255) {
    return problem(property, key, 'keyBytes', `${property} must be 1 to 255 bytes of UTF-8 (got ${bytes})${noKey === false ? '' : `; ${noKey}`}`);
  }
  return undefined;
}

/** Why `value` is not a `reuse` policy (a key of docs/keys.md's reuse table), or undefined when it is one (or absent, or null). */
export function reuseProblem(value: unknown, property = 'reuse'): ValidationError | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && Object.hasOwn(REUSE_TABLE.going, value))) return undefined;
  const allowed = Object.keys(REUSE_TABLE.going)
    .map((r) => `'${r}'`)
    .join(', ');
  return problem(property, value, 'isReuse', `${property} must be one of ${allowed}`);
}

/**
 * Why `value` is not an `onDuplicate` for a workflow whose reuse is `reuse`, or undefined when it is
 * one (or absent, or null): a mode of docs/keys.md's duplicate table or `{ sendEvent: name }` with an event name,
 * and never `'runAgain'` under `reuse: 'never'` (the waiting run could never take the key).
 */
export function onDuplicateProblem(value: unknown, reuse: ReusePolicy, property = 'onDuplicate'): ValidationError | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'object' && Object.keys(value).join() === 'sendEvent') {
    return nameProblem((value as { sendEvent: unknown }).sendEvent, `${property}.sendEvent`);
  }
  if (value === 'runAgain' && reuse === 'never') {
    return problem(
      property,
      value,
      'runAgainNeedsReuse',
      `${property} 'runAgain' cannot be combined with reuse 'never' (the waiting run could never take the key)`,
    );
  }
  if (typeof value === 'string' && value !== 'sendEvent' && Object.hasOwn(GOING_HOLDER_TABLE, value)) return undefined;
  const modes = Object.keys(GOING_HOLDER_TABLE)
    .filter((m) => m !== 'sendEvent')
    .map((m) => `'${m}'`);
  return problem(property, value, 'isOnDuplicate', `${property} must be one of ${modes.join(', ')} or { sendEvent: name }`);
}

/** Lowest and highest priority (the range of a Postgres integer). */
export const PRIORITY_RANGE = [-2_147_483_648, 2_147_483_647] as const;

/** Why `value` is not a priority (an integer in {@link PRIORITY_RANGE}), or undefined when it is one (or absent). */
export function priorityProblem(value: unknown, property = 'priority'): ValidationError | undefined {
  if (value === undefined || (Number.isInteger(value) && (value as number) >= PRIORITY_RANGE[0] && (value as number) <= PRIORITY_RANGE[1])) return undefined;
  return problem(property, value, 'isPriority', `${property} must be an integer from ${PRIORITY_RANGE[0]} to ${PRIORITY_RANGE[1]}`);
}

/** Why `value` cannot be stored as JSON (BigInt, function, symbol, cycle, non-finite number, too big), or undefined. */
export function jsonProblem(value: unknown, property = 'input'): ValidationError | undefined {
  const stack: unknown[] = [];
  // viaToJSON: v is what a toJSON returned, which JSON.stringify does not ask for its toJSON again
  const walk = (v: unknown, path: string, viaToJSON = false): string | undefined => {
    switch (typeof v) {
      case 'bigint':
        return `${path} is a BigInt, which JSON cannot hold`;
      case 'function':
      case 'symbol':
        return `${path} is a ${typeof v}, which JSON cannot hold`;
      case 'number':
        return Number.isFinite(v) ? undefined : `${path} is ${v}, which JSON cannot hold`;
      case 'string':
        return stringProblem(v, path);
      case 'object': {
        if (v === null) return undefined;
        if (stack.includes(v)) return `${path} refers back to itself (a cycle)`;
        if (stack.length >= MAX_JSON_DEPTH) return `${path} is nested more than ${MAX_JSON_DEPTH} levels deep`;
        const toJSON = (v as { toJSON?: unknown }).toJSON;
        if (typeof toJSON === 'function' && !viaToJSON) {
          // what JSON.stringify would store is what toJSON returns (a Date: its ISO string)
          let json: unknown;
          try {
            json = (toJSON as (key: string) => unknown).call(v, '');
          } catch (err) {
            return `${path}.toJSON() threw (${(err as Error)?.message})`;
          }
          // returning itself: stored as its own fields, as before (JSON.stringify drops its functions)
          if (json === v) return undefined;
          stack.push(v);
          try {
            return walk(json, path, true);
          } finally {
            stack.pop();
          }
        }
        stack.push(v);
        try {
          for (const [k, child] of Object.entries(v as object)) {
            if (child === undefined && !Array.isArray(v)) continue;
            // what a toJSON returned is stored as JSON.stringify stores it: its function fields dropped
            if (viaToJSON && typeof child === 'function' && !Array.isArray(v)) continue;
            const badKey = Array.isArray(v) ? undefined : stringProblem(k, `${path} (a property name)`);
            if (badKey) return badKey;
            const p = walk(child, Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`);
            if (p) return p;
          }
        } finally {
          stack.pop();
        }
        return undefined;
      }
      default:
        return undefined;
    }
  };
  const why = walk(value, property);
  if (why) return problem(property, undefined, 'isJson', `${why}; ${property} must be JSON-serialisable`);
  if (value !== undefined && Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8') > MAX_JSON_BYTES) {
    return problem(property, undefined, 'maxSize', `${property} is larger than ${MAX_JSON_BYTES} bytes of JSON`);
  }
  return undefined;
}

/** Every option name of `T`, as a record the compiler checks is complete (a new option must be listed). */
export type OptionNames<T> = { readonly [K in keyof Required<T>]: true };

/** The names of an {@link OptionNames} record. */
export function optionNames<T>(names: OptionNames<T>): readonly string[] {
  return Object.keys(names);
}

/** Edit distance of two short strings: insertions, deletions, substitutions and swaps of neighbours each count 1. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * One problem per own key of `options` that is not one of `known` (a misspelt option would
 * otherwise be ignored silently), naming the nearest known name and every known one. `prefix`
 * names the object (`'retry.'`, `'items[2].'`). Anything but a plain object has no names to check.
 */
export function unknownOptionProblems(options: unknown, known: readonly string[], prefix = ''): ValidationError[] {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return [];
  return Object.keys(options)
    .filter((name) => !known.includes(name))
    .map((name) => {
      const [guess] = known
        .map((k) => ({ k, d: k.toLowerCase() === name.toLowerCase() ? 0 : distance(k, name) }))
        .filter(({ d }) => d <= Math.max(1, Math.floor(name.length / 3)))
        .sort((x, y) => x.d - y.d);
      const hint = guess ? ` (did you mean "${prefix}${guess.k}"?)` : '';
      const message = `unknown option "${prefix}${name}"${hint}; the options are ${known.join(', ')}`;
      return problem(`${prefix}${name}`, (options as Record<string, unknown>)[name], 'isKnownOption', message);
    });
}

/** Problems found by several checks, reported together in one `DurableValidationError`. */
export class Problems {
  readonly list: ValidationError[] = [];

  /** Adds a problem with `property`. */
  add(property: string, value: unknown, constraint: string, message: string): void {
    this.list.push(problem(property, value, constraint, message));
  }

  /** Adds `e` when it is a problem (the result of a `…Problem` check). */
  push(e: ValidationError | undefined): void {
    if (e) this.list.push(e);
  }

  /** Throws them (see {@link assertValid}) if there is any. */
  throwIfAny(what: string): void {
    assertValid(what, this.list);
  }
}

/** Throws one `DurableValidationError` listing every problem, if there is any. */
export function assertValid(what: string, problems: (ValidationError | undefined)[]): void {
  const errors = problems.filter((p): p is ValidationError => !!p);
  if (errors.length === 0) return;
  const lines = errors.flatMap((e) => Object.values(e.constraints ?? {}));
  throw new DurableValidationError(`${what}: ${lines.join('; ')}`, errors);
}
