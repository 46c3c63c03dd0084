// JobStop: how the GUI thread stops a worker's job. The GUI thread requests; the job polls
// the std::stop_token it took when it began (between steps, setup phases, trials). A fresh
// stop is armed before each job, so that an old request cannot stop the next one.
#pragma once
#include <mutex>
#include <stop_token>

class JobStop {
public:
    // Thread-safe: asks the running job to stop at its next check.
    void request()
    {
        std::lock_guard lock(m_mutex);
        m_source.request_stop();
    }
    // Arms a fresh stop for the next job. Call before queueing the job (RunController does);
    // thread-safe like request().
    void reset()
    {
        std::lock_guard lock(m_mutex);
        m_source = std::stop_source();
    }
    // The job's token: taken once, when the job starts.
    std::stop_token token()
    {
        std::lock_guard lock(m_mutex);
        return m_source.get_token();
    }

private:
    // request_stop() itself is thread-safe; the lock only guards the swap in reset().
    std::mutex m_mutex;
    std::stop_source m_source;
};
