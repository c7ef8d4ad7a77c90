import { UnknownWorkflowError, UsageError } from '../errors';
import type { OnDuplicate } from '../domain/keys.policy';
import { onDuplicateProblem } from '../domain/validation';
import { checked, KEY, stringOption, WORKFLOW, type ParsedArgs } from './args';
import type { Command } from './command';
import { fields } from './table';

/** How `--on-duplicate` spells a `{ sendEvent: name }`. */
const SEND_EVENT = 'sendEvent:';

/** `--on-duplicate` as an `onDuplicate` value (undefined: the workflow's); a bad one is a usage error. */
function onDuplicateOption(parsed: ParsedArgs): OnDuplicate | undefined {
  const text = stringOption(parsed, 'on-duplicate');
  if (text === undefined) return undefined;
  const value = text.startsWith(SEND_EVENT) ? { sendEvent: text.slice(SEND_EVENT.length) } : text;
  if (onDuplicateProblem(value, 'afterClose')) {
    throw new UsageError(`--on-duplicate must be useExisting, error, cancelExisting, runAgain or ${SEND_EVENT}<event>, got ${JSON.stringify(text)}`);
  }
  return value as OnDuplicate;
}

/** An `onDuplicate` value as `--on-duplicate` spells it. */
const spell = (d: OnDuplicate) => (typeof d === 'string' ? d : `${SEND_EVENT}${d.sendEvent}`);

/**
 * `keys explain <workflow> <key>`: what a start with that key would do now and why, as
 * `durable.explainStart` answers it, from the workflow's definition the database holds (written by
 * each app node at boot). Without one it refuses with `unknown_workflow` rather than guess the key
 * rules. Writes nothing.
 */
export const keysExplainCommand: Command = {
  name: 'keys explain',
  args: ['<workflow>', '<key>'],
  options: {
    '--on-duplicate <mode>': `useExisting, error, cancelExisting, runAgain or ${SEND_EVENT}<event> (default: the workflow's)`,
  },
  summary: 'what a start of the workflow with this key would do now and why, from the definition the app nodes wrote (writes nothing)',
  async run(ctx) {
    const [workflow, key] = [checked(ctx.args[0], '<workflow>', WORKFLOW), checked(ctx.args[1], '<key>', KEY)];
    const onDuplicate = onDuplicateOption(ctx.parsed);
    const explained = await (await ctx.connection.insights()).explainStored(workflow, key, onDuplicate);
    if (!explained) {
      throw new UnknownWorkflowError(
        workflow,
        undefined,
        `keys explain: schema ${ctx.connection.target.schema} holds no definition of workflow "${workflow}" ` +
          '(each app node writes its workflows’ definitions when it boots: boot a node that defines it)',
      );
    }
    const { explanation: e, definition: d } = explained;
    const text = fields([
      ['outcome', e.outcome],
      ['run', e.runId],
      ['holder', e.holder && `${e.holder.id} (${e.holder.status})`],
      ['reason', e.reason],
      ['reuse', d.reuse],
      ['on duplicate', onDuplicate === undefined ? `${spell(d.onDuplicate)} (the workflow's)` : spell(onDuplicate)],
      ['definition', `${d.hash}, written by node ${d.nodeId} at ${d.updatedAt.toISOString()}`],
    ]);
    return { json: explained, text };
  },
};
