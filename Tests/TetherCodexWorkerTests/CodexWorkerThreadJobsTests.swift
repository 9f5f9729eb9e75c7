import Testing
import TetherCore
@testable import TetherCodexWorker
import TetherStreaming

/// Which jobs `events --session THREAD --follow` streams at each look at the thread's history.
@Suite struct CodexWorkerThreadJobsTests {
    typealias Entry = CodexWorkerThreadJobs.Entry
    let thread = "thr_1"

    func done(_ job: String, turn: String? = nil) -> Entry { Entry(job: job, turn: turn, finished: true) }
    func running(_ job: String, turn: String? = nil) -> Entry { Entry(job: job, turn: turn, finished: false) }
    func forgotten(_ turn: String) -> Entry { Entry(job: "hist_\(thread)_\(turn)", turn: turn, finished: true) }

    @Test func theFirstLookStreamsOnlyTheUnfinishedJob() {
        var jobs = CodexWorkerThreadJobs()
        #expect(jobs.look([done("job_a"), done("job_b"), running("job_c")]) == [.stream(job: "job_c")])
        #expect(jobs.look([done("job_a"), done("job_b"), done("job_c")]) == [])
    }

    @Test func aBurstBetweenTwoLooksIsStreamedWholeOldestFirstEachOnce() {
        var jobs = CodexWorkerThreadJobs()
        #expect(jobs.look([done("job_a")]) == [])
        let burst = (1...6).map { done("job_\($0)") }
        #expect(jobs.look([done("job_a")] + burst) == (1...6).map { .stream(job: "job_\($0)") })
        #expect(jobs.look([done("job_a")] + burst) == [])
        // A newer job already running does not hide the finished ones before it.
        #expect(jobs.look([done("job_a")] + burst + [done("job_7"), running("job_8")])
                == [.stream(job: "job_7"), .stream(job: "job_8")])
    }

    @Test func anEmptyThreadThenJobs() {
        var jobs = CodexWorkerThreadJobs()
        #expect(jobs.look([]) == [])
        #expect(jobs.hasBaseline)
        #expect(jobs.look([done("job_1"), running("job_2")]) == [.stream(job: "job_1"), .stream(job: "job_2")])
    }

    /// A restart renames every past job `hist_<thread>_<turn>`: the ones this stream streamed or
    /// had as its past are recognized (by turn, or by position in the baseline); a job it never
    /// saw is a loss, reported once.
    @Test func afterARestartOnlyUnseenJobsAreLosses() {
        var jobs = CodexWorkerThreadJobs()
        #expect(jobs.look([done("job_a")]) == [])
        #expect(jobs.look([done("job_a"), done("job_b", turn: "t_b")]) == [.stream(job: "job_b")])
        jobs.noteTurn("t_b", ofJob: "job_b")
        let afterRestart = [forgotten("t_a"), forgotten("t_b"), forgotten("t_c"), forgotten("t_d")]
        #expect(jobs.look(afterRestart) == [.lost(job: "hist_thr_1_t_c", turn: "t_c"), .lost(job: "hist_thr_1_t_d", turn: "t_d")])
        #expect(jobs.look(afterRestart + [running("job_e")]) == [.stream(job: "job_e")])
    }

    @Test func theFirstLookNeverReportsLosses() {
        var jobs = CodexWorkerThreadJobs()
        #expect(jobs.look([forgotten("t_a"), Entry(job: "hist_thr_1_t_b", turn: "t_b", finished: false)]) == [])
    }

    @Test func entriesComeFromTheHistoryInTurnOrderWithTheirTurnsAndEnds() throws {
        let history = try [
            #"{"type":"item.completed","jobId":"hist_thr_1_t_a","seq":0,"payload":{"threadId":"thr_1","turnId":"t_a"}}"#,
            #"{"type":"job.state","jobId":"hist_thr_1_t_a","seq":1,"payload":{"state":"CANCELLED"}}"#,
            #"{"type":"job.finished","jobId":"hist_thr_1_t_a","seq":2,"payload":{"state":"CANCELLED"}}"#,
            #"{"type":"error","jobId":"job_b","seq":0,"payload":{"message":"x","threadId":"thr_1","turnId":"t_b"}}"#,
            #"{"type":"job.finished","jobId":"job_b","seq":1,"payload":{"state":"FAILED"}}"#,
            #"{"type":"job.created","jobId":"job_c","seq":0,"payload":{"threadId":"thr_1"}}"#,
            #"{"type":"turn.started","jobId":"job_c","seq":3,"payload":{"threadId":"thr_1","turn":{"id":"t_c"}}}"#,
            #"{"type":"job.state","jobId":"job_d","seq":0,"payload":{"state":"DONE"}}"#,
            #"{"type":"job.finished","jobId":"job_d","seq":1,"payload":{"state":"DONE"}}"#,
        ].map { try JSONParser.parse($0) }
        let entries = CodexWorkerThreadJobs.entries(fromHistory: history, thread: "thr_1")
        #expect(entries == [
            Entry(job: "hist_thr_1_t_a", turn: "t_a", finished: true),
            Entry(job: "job_b", turn: "t_b", finished: true),
            Entry(job: "job_c", turn: "t_c", finished: false),
            Entry(job: "job_d", turn: nil, finished: true),
        ])
        #expect(entries[0].isForgotten)
        #expect(!entries[1].isForgotten)
    }
}
