/**
 * The tasks extension through the gateway (`io.modelcontextprotocol/tasks`): caller-bound task
 * handles, the router the gateway calls for `tools/call` and `tasks/*`, and the raw task
 * dispatch on an upstream's transport. See docs/mcp.md#tasks.
 */
export {
  createGatewayTasks,
  taskCallerOf,
  type AttachedUpstream,
  type GatewayTasks,
  type GatewayTasksOptions,
  type TaskCallExtras,
  type TaskCallOf,
} from './gateway-hook.js';
export { tapTaskDispatch, type TaskDispatch, type TaskDispatchOptions, type TaskRequestOptions, type TaskRpcAnswer } from './dispatch.js';
export {
  TASK_HANDLE_BYTES,
  TASK_HANDLE_PREFIX,
  isTaskHandleShape,
  mintTaskHandle,
  openTaskHandle,
  sealTaskHandle,
  taskHandleHash,
  taskOwnerKey,
  type TaskCaller,
} from './handles.js';
export { endOfTask, watchTask, type TaskEnd, type TaskWatchOptions } from './watch.js';
export {
  MISSING_CLIENT_CAPABILITY,
  TASK_INSTANCE_SEPARATOR,
  TASKS_EXTENSION,
  TaskRpcError,
  createTaskRouter,
  declaresTasks,
  tasksExtensionFor,
  upstreamHasTasks,
  type TaskCallAnswer,
  type TaskCallContext,
  type TaskFinal,
  type TaskRouter,
  type TaskRouterOptions,
  type TaskUpstream,
} from './router.js';
