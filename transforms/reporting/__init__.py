"""What every pass's stages report back to the driver: `job_metrics` (Beam counters),
`progress_marks` (empty files a running pass leaves for the progress lines) and `json_result`
(a pass's small results in one file, on any runner).

May import: transforms.contracts, transforms.storage.
"""
