import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type LevelAware = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

/**
 * A request's logger, made the first time the request writes a line (Fastify makes a child of the
 * server's logger for every request, its id bound to every line: a microsecond of CPU, and at
 * `warn` a probe that succeeds writes nothing). Once made it is that child: the same lines, the
 * same id, the same level; before, a level the server's logger leaves out is dropped unmade.
 */
class LazyRequestLogger {
  readonly #parent: LevelAware;
  readonly #bindings: Bindings;
  readonly #options: ChildOptions;
  #made: FastifyBaseLogger | undefined;

  constructor(parent: LevelAware, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #child(): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings, this.#options);
    return this.#made;
  }

  #write(level: Level, args: unknown[]): void {
    if (this.#made === undefined && !this.#parent.isLevelEnabled(level)) return;
    (this.#child()[level] as (...args: unknown[]) => void)(...args);
  }

  get level(): string {
    return (this.#made ?? this.#parent).level;
  }
  set level(level: string) {
    this.#child().level = level;
  }
  isLevelEnabled(level: string): boolean {
    return ((this.#made ?? this.#parent) as LevelAware).isLevelEnabled(level);
  }
  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#child().child(bindings, options);
  }
}

/**
 * The probes' child logger factory (a route option): a LazyRequestLogger, so that a probe pays for
 * its logger only when it writes a line (a failure, or every request in JSON at `info`). A route
 * with a level or serializers of its own gets Fastify's child at once.
 */
export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) => {
  const parent = logger as Partial<LevelAware>;
  if (typeof parent.isLevelEnabled !== 'function' || options.level || options.serializers)
    return logger.child(bindings, options);
  return new LazyRequestLogger(logger as LevelAware, bindings, options) as unknown as FastifyBaseLogger;
};
