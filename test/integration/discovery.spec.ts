import { Injectable, Module, Scope } from '@nestjs/common';
import { DurableService, DurableValidationError, RunContext, Step, Workflow } from '../../src';
import { createApp } from '../support';

const order: string[] = [];

@Injectable()
class Greeter {
  greet(name: string) {
    return `hello ${name}`;
  }
}

// Steps declared in an order that is neither alphabetical nor by length.
@Workflow('discovery_ordered')
class Ordered {
  constructor(private readonly greeter: Greeter) {}

  @Step()
  async zulu(ctx: RunContext<{ name: string }>) {
    order.push(`zulu:${ctx.stepName}`);
    return 1;
  }

  @Step()
  async alpha(ctx: RunContext<{ name: string }>) {
    order.push(`alpha:${ctx.stepName}`);
    return 2;
  }

  @Step()
  async mike(ctx: RunContext<{ name: string }>) {
    order.push(`mike:${ctx.stepName}`);
    return 3;
  }

  @Step()
  async bravo(ctx: RunContext<{ name: string }>) {
    order.push(`bravo:${ctx.stepName}`);
    return { greeting: this.greeter.greet(ctx.input.name) };
  }
}

@Module({ providers: [Greeter, Ordered], exports: [Greeter] })
class InnerModule {}

@Module({ imports: [InnerModule] })
class FeatureModule {}

/** An ordinary service in another module, injecting DurableService without importing DurableModule. */
@Injectable()
class Starter {
  constructor(readonly durable: DurableService) {}
}
@Module({ providers: [Starter] })
class StarterModule {}

@Workflow('discovery_dup')
class DupA {
  @Step()
  async a() {
    return 'a';
  }
}

@Workflow('discovery_dup')
class DupB {
  @Step()
  async b() {
    return 'b';
  }
}

@Workflow('discovery_empty')
class Empty {
  notAStep() {
    return 1;
  }
}

@Workflow('discovery_bad_attempts')
class BadAttempts {
  @Step({ retry: { attempts: 0 } })
  async s() {
    return 1;
  }
}

@Workflow('discovery_bad_timeout')
class BadTimeout {
  @Step({ timeout: 'whenever' })
  async s() {
    return 1;
  }
}

@Workflow('discovery_bad_run_timeout', { timeout: 'later' })
class BadRunTimeout {
  @Step()
  async s() {
    return 1;
  }
}

@Workflow('discovery_request_scoped')
@Injectable({ scope: Scope.REQUEST })
class RequestScoped {
  @Step()
  async s() {
    return 1;
  }
}

@Workflow('discovery_transient')
@Injectable({ scope: Scope.TRANSIENT })
class Transient {
  @Step()
  async s() {
    return 1;
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {}

@Workflow('discovery_needs_request')
@Injectable()
class NeedsRequest {
  constructor(readonly perRequest: PerRequest) {}
  @Step()
  async s() {
    return 1;
  }
}

describe('workflow discovery', () => {
  beforeEach(() => {
    order.length = 0;
  });

  it('discovers a workflow provided in a nested module and runs its steps in declaration order', async () => {
    const { app } = await createApp({ imports: [FeatureModule, StarterModule] });
    const durable = app.get(Starter).durable; // global module: injectable in any module
    const { runId } = await durable.start('discovery_ordered', { name: 'ada' });
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.status).toBe('completed');
    expect(order).toEqual(['zulu:zulu', 'alpha:alpha', 'mike:mike', 'bravo:bravo']);
    // the last step's return value is the run's result, and the class got its Nest dependency
    expect(run.result).toEqual({ greeting: 'hello ada' });
  });

  it('accepts the workflow class as well as its name', async () => {
    const { durable } = await createApp({ imports: [FeatureModule] });
    const { runId } = await durable.start(Ordered, { name: 'bob' });
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.workflow).toBe('discovery_ordered');
    expect(run.result).toEqual({ greeting: 'hello bob' });
  });

  it('fails startup when two workflows share one name', async () => {
    await expect(createApp({ workflows: [DupA, DupB] })).rejects.toThrow(/discovery_dup/);
  });

  it('fails startup when a workflow has no steps', async () => {
    await expect(createApp({ workflows: [Empty] })).rejects.toThrow(/discovery_empty/);
  });

  it.each([
    ['retry.attempts: 0', BadAttempts, /discovery_bad_attempts[\s\S]*attempts|attempts[\s\S]*discovery_bad_attempts/],
    ['a step timeout that is not a duration', BadTimeout, /discovery_bad_timeout[\s\S]*timeout|timeout[\s\S]*discovery_bad_timeout/],
    ['a workflow timeout that is not a duration', BadRunTimeout, /discovery_bad_run_timeout[\s\S]*timeout|timeout[\s\S]*discovery_bad_run_timeout/],
  ])('fails startup on bad step/workflow options (%s), naming the workflow and the option', async (_l, cls, re) => {
    await expect(createApp({ workflows: [cls as never] })).rejects.toThrow(re as RegExp);
  });

  it.each([
    ['request-scoped', [RequestScoped], /discovery_request_scoped.*RequestScoped.*request-scoped/],
    ['transient', [Transient], /discovery_transient.*Transient.*transient/],
    ['depending on a request-scoped provider', [NeedsRequest, PerRequest], /discovery_needs_request.*NeedsRequest.*depends on a request-scoped provider/],
  ])('fails startup, naming the class, when a workflow is not a singleton (%s)', async (_l, providers, re) => {
    const failed = createApp({ workflows: providers as never[] });
    await expect(failed).rejects.toBeInstanceOf(DurableValidationError);
    await expect(failed).rejects.toThrow(re as RegExp);
    await expect(failed).rejects.toThrow(/must be a singleton provider/);
  });

  it("refuses reuse: 'never' with onDuplicate: 'runAgain' when the class is defined", () => {
    expect(() => {
      // types bypassed on purpose
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      @Workflow('discovery_bad_policy', { reuse: 'never', onDuplicate: 'runAgain' } as any)
      class Bad {
        @Step()
        async s() {
          return 1;
        }
      }
      return Bad;
    }).toThrow(/runAgain|never/);
  });
});
