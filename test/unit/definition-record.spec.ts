import { definitionRecord } from '../../src/definition/definition-record';
import type { WorkflowDefinition } from '../../src/definition/workflow-definition';
import { DEFAULT_RETRY } from '../../src/domain/retry.policy';

/** A definition with two steps and the defaults, changed by `over`. */
const def = (over: Partial<WorkflowDefinition> = {}): WorkflowDefinition => ({
  name: 'orders',
  type: class {},
  instance: {},
  reuse: 'afterClose',
  onDuplicate: 'useExisting',
  priority: 0,
  retry: DEFAULT_RETRY,
  steps: ['reserve', 'charge'].map((name, index) => ({ name, index, retry: DEFAULT_RETRY, run: () => undefined })),
  ...over,
});

describe('definitionRecord', () => {
  it('holds the key rules and the step names; a debounce merge function is recorded as such', () => {
    expect(definitionRecord(def({ onDuplicate: { sendEvent: 'more' }, debounce: { periodMs: 1000, merge: () => 1 } }))).toEqual({
      workflow: 'orders',
      reuse: 'afterClose',
      onDuplicate: { sendEvent: 'more' },
      debounce: { periodMs: 1000, timeoutMs: null, merge: 'function' },
      steps: ['reserve', 'charge'],
      hash: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
  });

  it('the same definition has the same hash; any rule or option changed gives another', () => {
    const { hash } = definitionRecord(def());
    expect(definitionRecord(def({ instance: { other: true } })).hash).toBe(hash);
    const changed = [
      def({ reuse: 'never' }),
      def({ onDuplicate: 'error' }),
      def({ priority: 5 }),
      def({ timeoutMs: 60_000 }),
      def({ controls: { by: 'key', concurrency: { limit: 1, grouped: true } } }),
      def({ steps: def().steps.slice(0, 1) }),
      def({ steps: def().steps.map((s) => ({ ...s, retry: { ...DEFAULT_RETRY, attempts: 9 } })) }),
    ];
    for (const other of changed) expect(definitionRecord(other).hash).not.toBe(hash);
  });
});
