import { dropReason } from '../../src/domain/drop-reason';

describe('dropReason', () => {
  it('a finished run had already finished, whatever was sent and whatever its deadline', () => {
    for (const unbufferedEvent of [undefined, 'go']) {
      expect(dropReason({ status: 'completed', pastDeadline: true, unbufferedEvent })).toBe('had already finished (completed)');
      expect(dropReason({ status: 'cancelled', pastDeadline: false, unbufferedEvent })).toBe('had already finished (cancelled)');
    }
  });

  it('a going run drops an input or a buffered event only past its workflow deadline, whatever the deadline read after the drop says', () => {
    expect(dropReason({ status: 'waiting', pastDeadline: true })).toBe('is past its workflow deadline (waiting)');
    expect(dropReason({ status: 'running', pastDeadline: false })).toBe('is past its workflow deadline (running)');
  });

  it('an event sent without buffer: past the deadline, or not waited for with the hint to keep it', () => {
    const hint = 'send it with buffer to keep it until the run waits for it';
    expect(dropReason({ status: 'waiting', pastDeadline: true, unbufferedEvent: 'go' })).toBe('is past its workflow deadline (waiting)');
    expect(dropReason({ status: 'running', pastDeadline: false, unbufferedEvent: 'go' })).toBe(`is running and not waiting for event "go"; ${hint}`);
    expect(dropReason({ status: 'waiting', pastDeadline: false, unbufferedEvent: 'go' })).toBe(`is waiting, but not for event "go"; ${hint}`);
    expect(dropReason({ status: 'pending', pastDeadline: false, unbufferedEvent: 'go' })).toBe(`is pending and not waiting for event "go"; ${hint}`);
  });
});
