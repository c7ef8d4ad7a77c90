/**
 * What a `<!-- doc-test: fragment -->` block may use without declaring it: the names the pages'
 * examples share (the service, a step's context, a test's env, the tutorial's classes, workflows
 * named in the prose) and the package's exports. A fragment that declares or imports one of these names itself
 * gets its own, not this one.
 */
import * as runtimeExports from '../../src';

/** Name → its declaration. */
const DECLARED: Record<string, string> = {
  durable: "declare const durable: import('nestjs-durable').DurableService;",
  ctx: "declare const ctx: import('nestjs-durable').RunContext<{ id: number }>;",
  dataSource: "declare const dataSource: import('typeorm').DataSource;",
  env: "declare const env: import('nestjs-durable/testing').DurableTestEnv;",
  Article: 'declare class Article { id: number; title: string; body: string; summary: string | null }',
  CmsService: 'declare class CmsService {}',
  AirlineClient: 'declare class AirlineClient { book(): Promise<string>; cancel(id: string): Promise<void> }',
  HotelClient: 'declare class HotelClient { book(): Promise<string>; cancel(id: string): Promise<void> }',
  PaymentsClient: 'declare class PaymentsClient { charge(): Promise<void> }',
  runId: 'declare const runId: string;',
  flowId: 'declare const flowId: string;',
  oldId: 'declare const oldId: string;',
  invoiceRunId: 'declare const invoiceRunId: string;',
  id: 'declare const id: number;',
  ids: 'declare const ids: number[];',
  title: 'declare const title: string;',
  body: 'declare const body: string;',
  summary: 'declare const summary: string;',
  total: 'declare let total: number;',
  users: 'declare const users: { id: number }[];',
  myMigrations: "declare const myMigrations: (new () => import('typeorm').MigrationInterface)[];",
};

/** Workflow classes the examples name (the workflow itself does not matter to them). */
const WORKFLOWS = ['ProcessArticle', 'Reminder', 'Echo', 'Extract', 'Transform', 'Report', 'Audit', 'Summarize', 'Resize', 'SendDigest'];

/** Exports of the package a fragment may use unimported. */
const PACKAGE = [
  'DurableService',
  'RunContext',
  'Duration',
  'Workflow',
  'Step',
  'Schedule',
  'isSuspension',
  'seconds',
  'minutes',
  'hours',
  'days',
  'KeyTakenError',
];

/** Whether the package exports `name` as a type only (imported with `type`, as an app with `isolatedModules` must). */
const typeOnly = (name: string): boolean => !(name in runtimeExports);

/**
 * The lines to put before a fragment that declares `own` names itself: one import of the
 * package's names and one declaration per shared name, each on one line (so that a problem's
 * line in the fragment is its line in the page plus the returned count).
 */
export function fragmentPrelude(own: Set<string>): string[] {
  const named = PACKAGE.filter((n) => !own.has(n)).map((n) => (typeOnly(n) ? `type ${n}` : n));
  const lines = named.length ? [`import { ${named.join(', ')} } from 'nestjs-durable';`] : [];
  for (const [name, declaration] of Object.entries(DECLARED)) if (!own.has(name)) lines.push(declaration);
  for (const name of WORKFLOWS) if (!own.has(name)) lines.push(`declare class ${name} {}`);
  return lines;
}
