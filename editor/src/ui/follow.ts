/**
 * Whom this editor follows (a collaborator's awareness client id): the presence chips set it,
 * the canvas's presence layer moves the view along with theirs. Undefined: nobody.
 */
import { createContext, useContext } from 'react';

export interface FollowState {
  following: number | undefined;
  setFollowing(clientId: number | undefined): void;
}

export const FollowContext = createContext<FollowState>({ following: undefined, setFollowing: () => {} });

export const useFollow = (): FollowState => useContext(FollowContext);
