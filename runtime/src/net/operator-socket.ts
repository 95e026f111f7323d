/**
 * A WebSocket to a destination the operator named on the command line (`switchboard run
 * --attach URL`). That is the operator's choice, not a flow's, a room's or a model's, so no
 * destination policy applies; it is still opened here, in net/, where every outbound connection
 * of the runtime is made (DESIGN.md "One module makes outbound HTTP").
 */
import WebSocket, { type ClientOptions } from 'ws';

export function operatorWebSocket(url: string | URL, options: ClientOptions): WebSocket {
  return new WebSocket(url, options);
}
