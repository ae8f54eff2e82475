/** The errors of src/config/: settings and environment hooks, each naming the variables at fault, never their values. */
import { HookrelayError } from '../contract/hookrelayError.ts';

export class SettingsError extends HookrelayError {
  readonly code = 'HOOKRELAY_SETTINGS_INVALID' as const;
  override readonly name = 'SettingsError';
  constructor(
    readonly variables: string[],
    message: string,
  ) {
    super(message);
  }
}

/** E2: names the variables at fault, never their values. */
export class EnvHookConfigError extends HookrelayError {
  readonly code = 'HOOKRELAY_ENV_HOOK_CONFIG_INVALID' as const;
  override readonly name = 'EnvHookConfigError';
  constructor(
    readonly variables: string[],
    problem: string,
  ) {
    super(`Invalid environment hook configuration (${variables.join(', ')}): ${problem}`);
  }
}
