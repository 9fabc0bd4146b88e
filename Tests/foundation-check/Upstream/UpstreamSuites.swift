// The ported swift-corelibs-foundation suites (Upstream/Test*.swift), each test in its file's order, run as XCTest
// runs them: a new instance of the suite's class per test, setUp() before and tearDown() after. Of TestFileHandle,
// only the tests of the background notifications (readInBackgroundAndNotify and its kin), which go through the run
// loop; the rest of that file is about file I/O.

/// One ported upstream test.
struct UpstreamTest: @unchecked Sendable {
    // Unchecked Sendable: made and run on the main thread only (the loop's blocks run there too).
    let suite: String
    let name: String
    let run: () throws -> Void
}

/// Runs `body` on a new instance of `suite`, between its setUp() and tearDown().
func runCase<Suite: XCTestCase>(_ suite: Suite.Type, _ body: (Suite) throws -> Void) throws {
    let instance = suite.init()
    instance.setUp()
    defer { instance.tearDown() }
    try body(instance)
}

/// Every ported test.
var upstreamTests: [UpstreamTest] {
    [
        UpstreamTest(suite: "TestRunLoop", name: "test_constants") {
            try runCase(TestRunLoop.self) { $0.test_constants() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_runLoopInit") {
            try runCase(TestRunLoop.self) { $0.test_runLoopInit() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_runLoopRunMode") {
            try runCase(TestRunLoop.self) { $0.test_runLoopRunMode() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_runLoopLimitDate") {
            try runCase(TestRunLoop.self) { $0.test_runLoopLimitDate() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_runLoopPoll") {
            try runCase(TestRunLoop.self) { $0.test_runLoopPoll() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_commonModes") {
            try runCase(TestRunLoop.self) { $0.test_commonModes() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_addingRemovingPorts") {
            try runCase(TestRunLoop.self) { $0.test_addingRemovingPorts() }
        },
        UpstreamTest(suite: "TestRunLoop", name: "test_mainDispatchQueueCallout") {
            try runCase(TestRunLoop.self) { $0.test_mainDispatchQueueCallout() }
        },
        UpstreamTest(suite: "TestTimer", name: "test_timerInit") {
            try runCase(TestTimer.self) { $0.test_timerInit() }
        },
        UpstreamTest(suite: "TestTimer", name: "test_timerTickOnce") {
            try runCase(TestTimer.self) { $0.test_timerTickOnce() }
        },
        UpstreamTest(suite: "TestTimer", name: "test_timerRepeats") {
            try runCase(TestTimer.self) { $0.test_timerRepeats() }
        },
        UpstreamTest(suite: "TestTimer", name: "test_timerInvalidate") {
            try runCase(TestTimer.self) { $0.test_timerInvalidate() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_defaultQueue") {
            try runCase(TestNotificationQueue.self) { $0.test_defaultQueue() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postNowToDefaultQueueWithoutCoalescing") {
            try runCase(TestNotificationQueue.self) { $0.test_postNowToDefaultQueueWithoutCoalescing() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postNowToDefaultQueueWithCoalescing") {
            try runCase(TestNotificationQueue.self) { $0.test_postNowToDefaultQueueWithCoalescing() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postNowToCustomQueue") {
            try runCase(TestNotificationQueue.self) { $0.test_postNowToCustomQueue() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postNowForDefaultRunLoopMode") {
            try runCase(TestNotificationQueue.self) { $0.test_postNowForDefaultRunLoopMode() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postAsapToDefaultQueue") {
            try runCase(TestNotificationQueue.self) { $0.test_postAsapToDefaultQueue() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postAsapToDefaultQueueWithCoalescingOnNameAndSender") {
            try runCase(TestNotificationQueue.self) { $0.test_postAsapToDefaultQueueWithCoalescingOnNameAndSender() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postAsapToDefaultQueueWithCoalescingOnNameOrSender") {
            try runCase(TestNotificationQueue.self) { $0.test_postAsapToDefaultQueueWithCoalescingOnNameOrSender() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_postIdleToDefaultQueue") {
            try runCase(TestNotificationQueue.self) { $0.test_postIdleToDefaultQueue() }
        },
        UpstreamTest(suite: "TestNotificationQueue", name: "test_notificationQueueLifecycle") {
            try runCase(TestNotificationQueue.self) { $0.test_notificationQueueLifecycle() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_postNotification") {
            try runCase(TestNotificationCenter.self) { $0.test_postNotification() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_postNotificationForObject") {
            try runCase(TestNotificationCenter.self) { $0.test_postNotificationForObject() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_postMultipleNotifications") {
            try runCase(TestNotificationCenter.self) { $0.test_postMultipleNotifications() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_addObserverForNilName") {
            try runCase(TestNotificationCenter.self) { $0.test_addObserverForNilName() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_removeObserver") {
            try runCase(TestNotificationCenter.self) { $0.test_removeObserver() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_observeOnPostingQueue") {
            try runCase(TestNotificationCenter.self) { $0.test_observeOnPostingQueue() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_observeOnSpecificQueuePostFromMainQueue") {
            try runCase(TestNotificationCenter.self) { $0.test_observeOnSpecificQueuePostFromMainQueue() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_observeOnSpecificQueuePostFromObservedQueue") {
            try runCase(TestNotificationCenter.self) { $0.test_observeOnSpecificQueuePostFromObservedQueue() }
        },
        UpstreamTest(suite: "TestNotificationCenter", name: "test_observeOnSpecificQueuePostFromUnrelatedQueue") {
            try runCase(TestNotificationCenter.self) { $0.test_observeOnSpecificQueuePostFromUnrelatedQueue() }
        },
        UpstreamTest(suite: "TestThread", name: "test_currentThread") {
            try runCase(TestThread.self) { $0.test_currentThread() }
        },
        UpstreamTest(suite: "TestThread", name: "test_threadStart") {
            try runCase(TestThread.self) { $0.test_threadStart() }
        },
        UpstreamTest(suite: "TestThread", name: "test_threadName") {
            try runCase(TestThread.self) { $0.test_threadName() }
        },
        UpstreamTest(suite: "TestThread", name: "test_mainThread") {
            try runCase(TestThread.self) { $0.test_mainThread() }
        },
        UpstreamTest(suite: "TestThread", name: "test_callStackSymbols") {
            try runCase(TestThread.self) { try $0.test_callStackSymbols() }
        },
        UpstreamTest(suite: "TestThread", name: "test_callStackReturnAddresses") {
            try runCase(TestThread.self) { try $0.test_callStackReturnAddresses() }
        },
        UpstreamTest(suite: "TestThread", name: "test_sleepForTimeInterval") {
            try runCase(TestThread.self) { try $0.test_sleepForTimeInterval() }
        },
        UpstreamTest(suite: "TestThread", name: "test_sleepUntilDate") {
            try runCase(TestThread.self) { try $0.test_sleepUntilDate() }
        },
        UpstreamTest(suite: "TestSocketPort", name: "testRemoteSocketPortsAreUniqued") {
            try runCase(TestSocketPort.self) { $0.testRemoteSocketPortsAreUniqued() }
        },
        UpstreamTest(suite: "TestSocketPort", name: "testInitPicksATCPPort") {
            try runCase(TestSocketPort.self) { try $0.testInitPicksATCPPort() }
        },
        UpstreamTest(suite: "TestSocketPort", name: "testSendingOneMessageRemoteToLocal") {
            try runCase(TestSocketPort.self) { try $0.testSendingOneMessageRemoteToLocal() }
        },
        UpstreamTest(suite: "TestSocketPort", name: "testSendingMultipleMessagesRemoteToLocal") {
            try runCase(TestSocketPort.self) { try $0.testSendingMultipleMessagesRemoteToLocal() }
        },
        UpstreamTest(suite: "TestFileHandle", name: "test_readToEndOfFileInBackgroundAndNotify") {
            try runCase(TestFileHandle.self) { $0.test_readToEndOfFileInBackgroundAndNotify() }
        },
        UpstreamTest(suite: "TestFileHandle", name: "test_readToEndOfFileAndNotify") {
            try runCase(TestFileHandle.self) { $0.test_readToEndOfFileAndNotify() }
        },
        UpstreamTest(suite: "TestFileHandle", name: "test_readToEndOfFileAndNotify_readError") {
            try runCase(TestFileHandle.self) { $0.test_readToEndOfFileAndNotify_readError() }
        },
        UpstreamTest(suite: "TestFileHandle", name: "test_waitForDataInBackgroundAndNotify") {
            try runCase(TestFileHandle.self) { $0.test_waitForDataInBackgroundAndNotify() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_OperationCount") {
            try runCase(TestOperationQueue.self) { $0.test_OperationCount() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_OperationPriorities") {
            try runCase(TestOperationQueue.self) { $0.test_OperationPriorities() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_isExecutingWorks") {
            try runCase(TestOperationQueue.self) { $0.test_isExecutingWorks() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_AsyncOperation") {
            try runCase(TestOperationQueue.self) { $0.test_AsyncOperation() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_SyncOperationWithoutAQueue") {
            try runCase(TestOperationQueue.self) { $0.test_SyncOperationWithoutAQueue() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_MainQueueGetter") {
            try runCase(TestOperationQueue.self) { $0.test_MainQueueGetter() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CancelOneOperation") {
            try runCase(TestOperationQueue.self) { $0.test_CancelOneOperation() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CancelOperationsOfSpecificQueuePriority") {
            try runCase(TestOperationQueue.self) { $0.test_CancelOperationsOfSpecificQueuePriority() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CurrentQueueOnMainQueue") {
            try runCase(TestOperationQueue.self) { $0.test_CurrentQueueOnMainQueue() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CurrentQueueOnBackgroundQueue") {
            try runCase(TestOperationQueue.self) { $0.test_CurrentQueueOnBackgroundQueue() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CurrentQueueOnBackgroundQueueWithSelfCancel") {
            try runCase(TestOperationQueue.self) { $0.test_CurrentQueueOnBackgroundQueueWithSelfCancel() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CurrentQueueWithCustomUnderlyingQueue") {
            try runCase(TestOperationQueue.self) { $0.test_CurrentQueueWithCustomUnderlyingQueue() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_isSuspended") {
            try runCase(TestOperationQueue.self) { $0.test_isSuspended() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CurrentQueueWithUnderlyingQueueResetToNil") {
            try runCase(TestOperationQueue.self) { $0.test_CurrentQueueWithUnderlyingQueueResetToNil() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_OperationDependencyCount") {
            try runCase(TestOperationQueue.self) { $0.test_OperationDependencyCount() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CancelDependency") {
            try runCase(TestOperationQueue.self) { $0.test_CancelDependency() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_Deadlock") {
            try runCase(TestOperationQueue.self) { $0.test_Deadlock() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_ExecutionOrder") {
            try runCase(TestOperationQueue.self) { $0.test_ExecutionOrder() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_WaitUntilFinished") {
            try runCase(TestOperationQueue.self) { $0.test_WaitUntilFinished() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_OperationWaitUntilFinished") {
            try runCase(TestOperationQueue.self) { $0.test_OperationWaitUntilFinished() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_CustomOperationReady") {
            try runCase(TestOperationQueue.self) { try $0.test_CustomOperationReady() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_DependencyCycleBreak") {
            try runCase(TestOperationQueue.self) { $0.test_DependencyCycleBreak() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_Lifecycle") {
            try runCase(TestOperationQueue.self) { $0.test_Lifecycle() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_ConcurrentOperations") {
            try runCase(TestOperationQueue.self) { $0.test_ConcurrentOperations() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_ConcurrentOperationsWithDependenciesAndCompletions") {
            try runCase(TestOperationQueue.self) { $0.test_ConcurrentOperationsWithDependenciesAndCompletions() }
        },
        UpstreamTest(suite: "TestOperationQueue", name: "test_BlockOperationAddExecutionBlock") {
            try runCase(TestOperationQueue.self) { $0.test_BlockOperationAddExecutionBlock() }
        },
    ]
}
