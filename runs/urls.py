from django.templatetags.static import static
from django.urls import path
from django.views.generic import RedirectView

from runs import views_assets
from runs.kernel_pages import views as views_kernels
from runs.review import views as views_review
from runs.review import views_bank
from runs.run_pages import views, views_compare, views_feed, views_forks, views_studies, views_traces
from runs.task_pages import views as views_tasks
from runs.task_pages import views_suites
from runs.worker_pages import views as views_workers

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/rows/", views.runs_table, name="runs_rows"),
    path("runs/start/", views.run_start_view, name="run_start"),
    path("runs/demo/", views.demo_start_view, name="demo_start"),
    path("runs/compare/", views_compare.compare, name="run_compare"),
    path("studies/start/", views_studies.study_start_view, name="study_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/control/", views.run_control_view, name="run_control"),
    path("runs/<int:run_id>/message/", views.run_message_view, name="run_message"),
    path("runs/<int:run_id>/fork/", views_forks.fork_view, name="run_fork"),
    path("runs/<int:run_id>/steps/", views_feed.run_steps, name="run_steps"),
    path("runs/<int:run_id>/steps/<int:seq>/", views_feed.run_step, name="run_step"),
    path("runs/<int:run_id>/summary/", views_feed.run_summary, name="run_summary"),
    path("runs/<int:run_id>/chart/", views_feed.run_chart, name="run_chart"),
    path("runs/<int:run_id>/trace.jsonl", views_traces.trace_export, name="trace_export"),
    path("traces/import/", views_traces.trace_import_view, name="trace_import"),
    path("review/", views_review.queue, name="review_queue"),
    path("review/items/", views_review.queue_items, name="review_items"),
    path("review/<int:question_id>/decide/", views_review.decide, name="review_decide"),
    path("review/pending/", views_feed.pending_count, name="pending_count"),
    path("kernels/", views_kernels.kernel_index, name="kernels"),
    path("kernels/diff/", views_kernels.kernel_diff, name="kernel_diff"),
    path("kernels/<int:kernel_id>/", views_kernels.kernel_detail, name="kernel_detail"),
    path("kernels/<int:kernel_id>/source/", views_kernels.kernel_source, name="kernel_source"),
    path("kernels/<int:kernel_id>/download/", views_kernels.kernel_download, name="kernel_download"),
    path("kernels/<int:kernel_id>/verify/", views_kernels.kernel_verify_view, name="kernel_verify"),
    path("evaluations/<int:evaluation_id>/", views_kernels.evaluation_detail, name="evaluation_detail"),
    path("tasks/", views_tasks.task_index, name="tasks"),
    path("tasks/<slug:name>/", views_tasks.task_detail, name="task_detail"),
    path("suites/", views_suites.suite_index, name="suites"),
    path("suites/<int:suite_id>/", views_suites.suite_detail, name="suite_detail"),
    path("suites/<int:suite_id>/study/", views_suites.suite_study_start_view, name="suite_study_start"),
    path("suites/studies/<int:study_id>/", views_suites.suite_scoreboard, name="suite_scoreboard"),
    path(
        "suites/studies/<int:study_id>/scoreboard.csv", views_suites.suite_scoreboard_csv, name="suite_scoreboard_csv"
    ),
    path(
        "suites/studies/<int:study_id>/scoreboard.json",
        views_suites.suite_scoreboard_json,
        name="suite_scoreboard_json",
    ),
    path("bank/", views_bank.bank, name="bank"),
    path("bank/add/", views_bank.bank_add, name="bank_add"),
    path("workers/", views_workers.workers, name="workers"),
    path("workers/<int:host_id>/revoke/", views_workers.worker_revoke, name="worker_revoke"),
    path("assets/plotly.min.js", views_assets.plotly_js, name="plotly_js"),
    path("assets/pygments.css", views_assets.pygments_css, name="pygments_css"),
    # Browsers ask for /favicon.ico whatever the page says; the icon itself is a static file.
    path(
        "favicon.ico",
        RedirectView.as_view(url=static("favicon.svg"), permanent=True, http_method_names=["get", "head"]),
        name="favicon",
    ),
]
