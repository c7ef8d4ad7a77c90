import {
  decideStart,
  GOING_HOLDER_TABLE,
  KEPT_FINISHED_HOLDER_TABLE,
  REUSE_TABLE,
  settledDuplicateStatuses,
  statusesThatFreeKey,
} from '../../src/domain/keys.policy';
import type { OnDuplicate, ReusePolicy } from '../../src/domain/keys.policy';
import type { RunStatus } from '../../src/domain/run-info';

/**
 * Every cell of the spec's two tables (docs/keys.md), written out again here by hand from
 * the spec so that a change to the policy's data that disagrees with the spec fails a cell.
 */
const GOING: RunStatus[] = ['pending', 'running', 'waiting', 'compensating'];
const FAILED_ISH: RunStatus[] = ['failed', 'cancelled', 'compensated', 'compensation_failed'];
const REUSES: ReusePolicy[] = ['afterClose', 'afterFailure', 'never'];

// "Choosing reuse": holder's status → taken/free per reuse.
const SPEC_REUSE: [RunStatus[], Record<ReusePolicy, 'taken' | 'free'>][] = [
  [GOING, { afterClose: 'taken', afterFailure: 'taken', never: 'taken' }],
  [['completed'], { afterClose: 'free', afterFailure: 'taken', never: 'taken' }],
  [FAILED_ISH, { afterClose: 'free', afterFailure: 'free', never: 'taken' }],
];

// "What a Duplicate Returns", key taken by a run that's still going.
const SPEC_GOING: [OnDuplicate, string][] = [
  ['useExisting', 'useExisting'],
  ['error', 'reject'],
  ['cancelExisting', 'cancelExisting'],
  ['runAgain', 'runAgain'],
  [{ sendEvent: 'article_updated' }, 'sendEvent'],
];

const picked = { pickedUp: true };

describe('key policy: the reuse table, cell by cell', () => {
  for (const [statuses, row] of SPEC_REUSE) {
    for (const status of statuses) {
      for (const reuse of REUSES) {
        it(`holder ${status}, reuse ${reuse} → ${row[reuse]}`, () => {
          const d = decideStart(reuse, 'useExisting', { status, ...picked }, 'h1');
          if (row[reuse] === 'free') expect(d).toEqual({ action: 'create', handOffFrom: 'h1' });
          else expect(d).toEqual({ action: 'useExisting' });
        });
      }
    }
  }

  it('no holder: every mode creates', () => {
    for (const reuse of REUSES) {
      for (const [mode] of SPEC_GOING) expect(decideStart(reuse, mode, undefined)).toEqual({ action: 'create' });
    }
  });

  it('the data table matches the spec table', () => {
    expect(REUSE_TABLE.going).toEqual(SPEC_REUSE[0][1]);
    expect(REUSE_TABLE.completed).toEqual(SPEC_REUSE[1][1]);
    expect(REUSE_TABLE.failedOrCancelled).toEqual(SPEC_REUSE[2][1]);
  });
});

describe('key policy: onDuplicate against a going holder, cell by cell', () => {
  for (const status of GOING) {
    for (const reuse of ['afterClose', 'afterFailure'] as ReusePolicy[]) {
      for (const [mode, action] of SPEC_GOING) {
        const label = typeof mode === 'string' ? mode : 'sendEvent';
        it(`${label} with a ${status} (picked-up) holder, reuse ${reuse} → ${action}`, () => {
          const d = decideStart(reuse, mode, { status, ...picked }, 'h1');
          if (label === 'cancelExisting' && status === 'compensating') {
            // "A compensating holder can't be cancelled, so that start returns key_taken."
            expect(d).toEqual({ action: 'reject' });
          } else if (label === 'sendEvent') {
            expect(d).toEqual({ action: 'sendEvent', name: 'article_updated' });
          } else {
            expect(d.action).toBe(action);
          }
        });
      }
    }
  }

  it('reuse never behaves the same for a going holder (runAgain aside, which it forbids)', () => {
    for (const [mode, action] of SPEC_GOING.filter(([m]) => m !== 'runAgain')) {
      expect(decideStart('never', mode, { status: 'running', ...picked }).action).toBe(action);
    }
  });

  it('runAgain with a holder no worker picked up: the holder takes the newer input itself', () => {
    expect(decideStart('afterClose', 'runAgain', { status: 'pending', pickedUp: false })).toEqual({
      action: 'replaceInput',
      outcome: 'runAgain',
    });
    // a flow node waiting for its dependencies has not started either
    expect(decideStart('afterClose', 'runAgain', { status: 'waiting', pickedUp: false })).toEqual({ action: 'replaceInput', outcome: 'runAgain' });
    // a pending holder that already ran once (between retry attempts) was picked up: one waits behind it
    expect(decideStart('afterClose', 'runAgain', { status: 'pending', pickedUp: true }).action).toBe('runAgain');
    expect(decideStart('afterClose', 'runAgain', { status: 'waiting', pickedUp: true }).action).toBe('runAgain');
  });

  it('debounce: a debounced holder in its wait takes the input whatever onDuplicate says; after pickup it is an ordinary duplicate', () => {
    for (const [mode] of SPEC_GOING) {
      expect(decideStart('afterClose', mode, { status: 'pending', pickedUp: false, debouncing: true })).toEqual({
        action: 'replaceInput',
        outcome: 'debounced',
      });
    }
    expect(decideStart('afterClose', 'useExisting', { status: 'running', pickedUp: true, debouncing: true }).action).toBe('useExisting');
  });

  it('the data table matches the spec table', () => {
    expect(GOING_HOLDER_TABLE).toEqual({
      useExisting: 'useExisting',
      error: 'reject',
      cancelExisting: 'cancelExisting',
      runAgain: 'runAgain',
      sendEvent: 'sendEvent',
    });
  });
});

describe('key policy: a finished holder that reuse keeps', () => {
  // "A finished holder that reuse keeps answers both cancelExisting/runAgain/sendEvent with key_taken."
  const kept: [RunStatus, ReusePolicy][] = [
    ['completed', 'afterFailure'],
    ['completed', 'never'],
    ...FAILED_ISH.map((s): [RunStatus, ReusePolicy] => [s, 'never']),
  ];
  for (const [status, reuse] of kept) {
    for (const [mode] of SPEC_GOING) {
      const label = typeof mode === 'string' ? mode : 'sendEvent';
      const expected = label === 'useExisting' ? 'useExisting' : 'reject';
      it(`${label}, holder ${status}, reuse ${reuse} → ${expected}`, () => {
        expect(decideStart(reuse, mode, { status, ...picked }, 'h1')).toEqual({ action: expected });
      });
    }
  }

  it('the data table matches', () => {
    expect(KEPT_FINISHED_HOLDER_TABLE).toEqual({
      useExisting: 'useExisting',
      error: 'reject',
      cancelExisting: 'reject',
      runAgain: 'reject',
      sendEvent: 'reject',
    });
  });
});

describe('key policy: when a run waiting behind the holder takes the key', () => {
  it('afterClose: however the holder ends', () => {
    expect(statusesThatFreeKey('afterClose').sort()).toEqual(['cancelled', 'compensated', 'compensation_failed', 'completed', 'failed']);
  });
  it('afterFailure: not after a completed holder (the waiting run is cancelled then)', () => {
    expect(statusesThatFreeKey('afterFailure').sort()).toEqual(['cancelled', 'compensated', 'compensation_failed', 'failed']);
  });
  it('never: never', () => {
    expect(statusesThatFreeKey('never')).toEqual([]);
  });
});

describe('key policy: the statuses a start can answer in one statement', () => {
  it('useExisting: every going status and every finished one reuse keeps; never a free one', () => {
    expect(settledDuplicateStatuses('afterFailure', 'useExisting', false)).toEqual({
      useExisting: ['pending', 'running', 'waiting', 'compensating', 'completed'],
      reject: [],
    });
  });
  it('error under never: every status is refused', () => {
    expect(settledDuplicateStatuses('never', 'error', false).reject).toHaveLength(9);
  });
  it('a debounced workflow leaves pending to the locking path (it may be in its debounce wait)', () => {
    expect(settledDuplicateStatuses('afterClose', 'useExisting', true).useExisting).not.toContain('pending');
  });
  it('runAgain leaves pending to the locking path (a holder not picked up takes the input)', () => {
    expect(settledDuplicateStatuses('afterClose', 'runAgain', false)).toEqual({ useExisting: [], reject: [] });
  });
});
