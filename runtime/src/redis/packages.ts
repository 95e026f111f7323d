/**
 * The Redis modules load bullmq and ioredis, which the released package does not install by
 * default (they are optional peers: scale-out is opt-in, and bullmq's optional native add-on
 * would bring an install script). Loading one without them says what to install instead of a
 * bare "Cannot find package".
 */
export class RedisPackagesMissing extends Error {
  readonly code = 'redis_packages_missing';
}

export async function loadRedisModule<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    const err = e as { code?: string; message?: string };
    if (err.code === 'ERR_MODULE_NOT_FOUND' && /['"/](bullmq|ioredis)['"/]/.test(err.message ?? ''))
      throw new RedisPackagesMissing(
        'scale-out on Redis needs the packages bullmq and ioredis, which this install does not have: run `npm install bullmq ioredis` where switchboard is installed (or `npm install -g` beside a global one)',
        { cause: e },
      );
    throw e;
  }
}
