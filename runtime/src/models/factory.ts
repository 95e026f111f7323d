/**
 * The default model factory: `scripted` entries get the scripted provider, `openai` entries the
 * openai SDK provider, which is imported lazily so that importing the library stays cheap.
 * A host adds providers by wrapping this factory.
 */
import type { ModelConfigT } from '@switchboard/schemas';
import { createScriptedProvider } from './scripted.js';
import {
  ModelError,
  type ModelFactory,
  type ModelFactoryContext,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from './types.js';

type OpenAIModule = { createOpenAIProvider: ModelFactory };
let openaiModule: Promise<OpenAIModule> | undefined;

function loadOpenAI(): Promise<OpenAIModule> {
  // A literal specifier, so that the library bundle (scripts/bundle.mjs) emits the provider as a
  // chunk of its own, loaded here on first use; a failed load becomes a clear error.
  openaiModule ??= (import('./openai.js') as Promise<OpenAIModule>).catch((e: unknown) => {
    openaiModule = undefined;
    throw new Error(`openai provider not available: ${(e as Error).message}`);
  });
  return openaiModule;
}

/** A provider that loads the openai module on its first call. */
class LazyOpenAIProvider implements ModelProvider {
  readonly scripted = false;
  private inner: Promise<ModelProvider> | undefined;
  constructor(
    private readonly name: string,
    private readonly config: ModelConfigT,
    private readonly ctx: ModelFactoryContext,
  ) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.inner ??= loadOpenAI().then((m) => {
      if (typeof m.createOpenAIProvider !== 'function')
        throw new Error('openai provider not available: createOpenAIProvider is not exported');
      return m.createOpenAIProvider(this.name, this.config, this.ctx);
    });
    let provider: ModelProvider;
    try {
      provider = await this.inner;
    } catch (e) {
      this.inner = undefined;
      // A refusal by the operator's policy keeps its name (it is never retried).
      if (e instanceof ModelError) throw e;
      throw new ModelError('bad_request', (e as Error).message, 0);
    }
    return provider.complete(request);
  }
}

export const defaultModelFactory: ModelFactory = (name, config, ctx) => {
  switch (config.provider) {
    case 'scripted':
      return createScriptedProvider(name, config, ctx);
    case 'openai':
      return new LazyOpenAIProvider(name, config, ctx);
    default:
      throw new Error(
        `models.${name}.provider: unknown provider "${config.provider}" (built in: openai, scripted)`,
      );
  }
};
