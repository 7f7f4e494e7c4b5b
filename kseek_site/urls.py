from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # Only the methods each answers: a PUT or DELETE is a 405, not a form (LoginView reads a PUT as a POST).
    path("accounts/login/", auth_views.LoginView.as_view(http_method_names=["get", "head", "post"]), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("runs.urls")),
]
