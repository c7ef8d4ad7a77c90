/**
 * The `transactionManager` module option with `@nestjs-cls/transactional` and its TypeORM adapter:
 * start, startMany, startFlow and sendEvent without `manager` join the ambient transaction and
 * commit or roll back with it — from a service method (`@Transactional()`) and from an HTTP route
 * whose transaction is opened around an `@IdempotentStart` (Express, supertest).
 */
import {
  CallHandler,
  Controller,
  ExecutionContext,
  Global,
  INestApplication,
  Injectable,
  Module,
  NestInterceptor,
  Post,
  Query,
  UseInterceptors,
} from '@nestjs/common';
import { Transactional, TransactionHost, ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { from, lastValueFrom } from 'rxjs';
import request from 'supertest';
import { DataSource } from 'typeorm';
import {
  DurableExceptionFilter,
  DurableService,
  DurableValidationError,
  IdempotentRun,
  IdempotentStart,
  RunContext,
  Step,
  Workflow,
  type StartResult,
} from '../../src';
import { countRuns, createApp, databaseUrl, freshSchema, ident, sql, TestApp, waitFor } from '../support';

type Tx = TransactionHost<TransactionalAdapterTypeOrm>;

@Workflow('tx_ship')
class Ship {
  @Step()
  async ship(ctx: RunContext<{ order: string }>) {
    return ctx.waitForEvent<string>('paid');
  }
}

/** The test schema's name, for the services' own table. */
class SchemaName {
  constructor(readonly name: string) {}
}

/** A service whose methods run in the ambient transaction and never pass `manager`. */
@Injectable()
class Orders {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly durable: DurableService,
    private readonly schema: SchemaName,
  ) {}

  @Transactional()
  async place(order: string, fail = false): Promise<StartResult> {
    await this.txHost.tx.query(`insert into ${ident(this.schema.name)}.orders (id) values ($1)`, [order]);
    const started = await this.durable.start(Ship, { order }, { key: order });
    if (fail) throw new Error('payment declined');
    return started;
  }

  @Transactional()
  async placeMany(orders: string[], fail = false) {
    const results = await this.durable.startMany(
      Ship,
      orders.map((o) => ({ input: { order: o }, key: o })),
    );
    if (fail) throw new Error('rolled back');
    return results;
  }

  @Transactional()
  async flow(fail = false) {
    const started = await this.durable.startFlow(
      this.durable
        .flow({ name: 'tx-flow' })
        .add('a', Ship, { order: 'fa' })
        .add('b', Ship, { order: 'fb' }, { deps: ['a'] }),
    );
    if (fail) throw new Error('rolled back');
    return started;
  }

  @Transactional()
  async pay(runId: string, fail = false) {
    const outcome = await this.durable.sendEvent(runId, 'paid', 'card');
    if (fail) throw new Error('rolled back');
    return outcome;
  }
}

/** Opens the ambient transaction around the rest of the request (a route "that has a transaction"). */
@Injectable()
class InTransaction implements NestInterceptor {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}
  intercept(_context: ExecutionContext, next: CallHandler) {
    return from(this.txHost.withTransaction(() => lastValueFrom(next.handle())));
  }
}

/** The controller's interceptors run before the route's: the transaction is open when the start runs. */
@Controller('orders')
@UseInterceptors(InTransaction)
class OrdersController {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly schema: SchemaName,
  ) {}

  /** Saves the order in the route's transaction with the run; `?fail=1` throws after both. */
  @Post()
  @IdempotentStart(Ship, { input: (req: { body: { order: string } }) => ({ order: req.body.order }) })
  async create(@IdempotentRun() run: StartResult, @Query('fail') fail?: string) {
    if (run.outcome === 'created') await this.txHost.tx.query(`insert into ${ident(this.schema.name)}.orders (id) values ($1)`, [run.runId]);
    if (fail) throw new Error('payment declined');
    return run;
  }
}

describe('transactionManager: bad values', () => {
  it('a transactionManager that is not a function is refused at startup, naming the option', async () => {
    await expect(createApp({ workflows: [Ship], options: { worker: false, transactionManager: 'txHost.tx' } })).rejects.toThrow(
      /transactionManager: must be a function/,
    );
    await expect(createApp({ workflows: [Ship], options: { worker: false, transactionManager: 'txHost.tx' } })).rejects.toBeInstanceOf(DurableValidationError);
  });
});

describe('transactionManager with @nestjs-cls/transactional (TypeORM adapter)', () => {
  let dataSource: DataSource;
  let t: TestApp;
  let schema: string;

  beforeAll(async () => {
    schema = freshSchema();
    dataSource = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    @Global()
    @Module({
      providers: [
        { provide: DataSource, useValue: dataSource },
        { provide: SchemaName, useValue: new SchemaName(schema) },
      ],
      exports: [DataSource, SchemaName],
    })
    class DbModule {}
    t = await createApp({
      schema,
      workflows: [Ship],
      providers: [Orders],
      imports: [
        DbModule,
        ClsModule.forRoot({
          global: true,
          middleware: { mount: true },
          plugins: [new ClsPluginTransactional({ imports: [DbModule], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }) })],
        }),
        { module: class OrdersHttpModule {}, controllers: [OrdersController], providers: [InTransaction] },
      ],
      async: {
        inject: [TransactionHost],
        useFactory: (txHost: unknown) => ({
          dataSource,
          schema,
          worker: { pollInterval: '100ms', concurrency: 5 },
          heartbeatInterval: '200ms',
          nodeTimeout: '1s',
          shutdownTimeout: '3s',
          transactionManager: () => (txHost as Tx).tx,
        }),
      },
      http: (app: INestApplication) => app.useGlobalFilters(new DurableExceptionFilter()),
    });
    await sql(`create table ${ident(schema)}.orders (id text primary key)`);
  });

  afterAll(async () => {
    await t?.close();
    await dataSource?.destroy();
  });

  const orders = () => sql<{ id: string }>(`select id from ${ident(schema)}.orders order by id`).then((r) => r.map((x) => x.id));

  it('a start in a committed transaction exists with the row written beside it', async () => {
    const { runId } = await t.get(Orders).place('o-commit');
    expect(await orders()).toContain('o-commit');
    expect(await t.durable.getRun(runId)).toMatchObject({ key: 'o-commit', workflow: 'tx_ship' });
  });

  it('a start in a transaction that rolls back is gone with it, and its key is free', async () => {
    await expect(t.get(Orders).place('o-rollback', true)).rejects.toThrow('payment declined');
    expect(await orders()).not.toContain('o-rollback');
    expect(await countRuns(schema, `key = 'o-rollback'`)).toBe(0);
    const again = await t.get(Orders).place('o-rollback');
    expect(again.outcome).toBe('created');
  });

  it('outside any transaction the start runs on its own (the fallback manager is not a transaction)', async () => {
    const { runId } = await t.durable.start(Ship, { order: 'o-plain' }, { key: 'o-plain' });
    expect(await t.durable.getRun(runId)).not.toBeNull();
  });

  it('startMany commits and rolls back with the transaction', async () => {
    await expect(t.get(Orders).placeMany(['m1', 'm2'], true)).rejects.toThrow('rolled back');
    expect(await countRuns(schema, `key in ('m1', 'm2')`)).toBe(0);
    await t.get(Orders).placeMany(['m1', 'm2']);
    expect(await countRuns(schema, `key in ('m1', 'm2')`)).toBe(2);
  });

  it('startFlow commits and rolls back with the transaction', async () => {
    await expect(t.get(Orders).flow(true)).rejects.toThrow('rolled back');
    expect(await countRuns(schema, `flow_name = 'tx-flow'`)).toBe(0);
    const { flowId } = await t.get(Orders).flow();
    expect(await countRuns(schema, `flow_id = $1`, [flowId])).toBe(2);
  });

  it('sendEvent is delivered at commit, and not at all on rollback', async () => {
    const { runId } = await t.durable.start(Ship, { order: 'o-pay' }, { key: 'o-pay' });
    await waitFor(async () => (await t.durable.getRun(runId))?.status === 'waiting', { message: 'the run waits for paid' });
    await expect(t.get(Orders).pay(runId, true)).rejects.toThrow('rolled back');
    expect((await t.durable.getRun(runId))?.status).toBe('waiting');
    expect(await t.get(Orders).pay(runId)).toBe('delivered');
    const done = await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(done).toMatchObject({ status: 'completed', result: 'card' });
  });

  it('HTTP: an @IdempotentStart route inside the route transaction commits the run with its row, and rolls both back', async () => {
    const ok = await request(t.server).post('/orders').set('Idempotency-Key', 'h-1').send({ order: 'h-1' });
    expect(ok.status).toBe(200);
    expect(ok.body.outcome).toBe('created');
    expect(await orders()).toContain(ok.body.runId);
    expect(await countRuns(schema, `key = 'h-1'`)).toBe(1);

    const failed = await request(t.server).post('/orders?fail=1').set('Idempotency-Key', 'h-2').send({ order: 'h-2' });
    expect(failed.status).toBe(500);
    expect(await countRuns(schema, `key = 'h-2'`)).toBe(0);
    // the rolled-back request left nothing behind: its retry starts the run afresh
    const retry = await request(t.server).post('/orders').set('Idempotency-Key', 'h-2').send({ order: 'h-2' });
    expect(retry.body.outcome).toBe('created');
    expect(await orders()).toContain(retry.body.runId);
  });
});
